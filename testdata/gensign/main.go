// Command gensign makes the go-crypto fixture key pair and signs a file with
// it; gen-fixtures.sh runs it. It is test tooling, not part of oci-tofu.
package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

func main() {
	if len(os.Args) != 4 || os.Args[1] != "keys" {
		fmt.Fprintln(os.Stderr, "usage: gensign keys PREFIX FILE-TO-SIGN")
		os.Exit(2)
	}
	if err := run(os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(prefix, file string) error {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }}
	e, err := openpgp.NewEntity("oci-tofu go-crypto fixtures", "", "gocrypto@oci-tofu.invalid", cfg)
	if err != nil {
		return err
	}
	write := func(name, typ string, ser func(w interface{ Write([]byte) (int, error) }) error) error {
		var b bytes.Buffer
		w, err := armor.Encode(&b, typ, nil)
		if err != nil {
			return err
		}
		if err := ser(w); err != nil {
			return err
		}
		w.Close()
		b.WriteByte('\n')
		return os.WriteFile(name, b.Bytes(), 0o644)
	}
	if err := write(prefix+"-private.asc", openpgp.PrivateKeyType, func(w interface{ Write([]byte) (int, error) }) error { return e.SerializePrivate(w, nil) }); err != nil {
		return err
	}
	if err := write(prefix+".asc", openpgp.PublicKeyType, func(w interface{ Write([]byte) (int, error) }) error { return e.Serialize(w) }); err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, e, bytes.NewReader(data), cfg); err != nil {
		return err
	}
	return os.WriteFile(file+".sig", sig.Bytes(), 0o644)
}
