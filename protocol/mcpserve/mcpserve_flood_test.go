package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// stdio is `oci-tofu mcp` over pipes, reading acme/greeting/aws from an
// OCI layout: what the test writes is its stdin, its stdout is read
// line by line; done has Run's error once it returns.
type stdio struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	outR *io.PipeReader
	done chan error
}

func startStdio(t *testing.T) *stdio {
	t.Helper()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/acme/greeting/aws"})
	if err != nil {
		t.Fatal(err)
	}
	seed.Push(t, repo, seed.ModuleArtifact(t, seed.TestdataModule(t, "greeting")), "1.0.0")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdio{in: inW, out: bufio.NewReaderSize(outR, 1<<16), outR: outR, done: make(chan error, 1)}
	opts := Options{RegistryHostname: "tofu.example.com",
		Registry: show.Options{Client: client, ModuleTemplate: "oci-layout:" + dir + "/${namespace}/${name}/${system}"}}
	go func() { s.done <- Run(context.Background(), opts, inR, outW) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-s.done
	})
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if m := s.receive(t); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// message is a JSON-RPC answer as the test reads it.
type message struct {
	ID     int `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// text is m's error: the JSON-RPC error's message, or the tool error's
// text; "" for an answer.
func (m message) text() string {
	switch {
	case m.Error != nil:
		return m.Error.Message
	case m.Result != nil && m.Result.IsError:
		var b strings.Builder
		for _, c := range m.Result.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	return ""
}

func (s *stdio) receive(t *testing.T) message {
	t.Helper()
	line, err := s.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m message
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return m
}

// Over stdio, an unknown tool, wrong argument types and a megabyte of
// arguments each get an error naming the problem, and the server goes
// on answering.
func TestStdioHostileInput(t *testing.T) {
	s := startStdio(t)
	good := `{"name":"get_module_details","arguments":{"module_id":"tofu.example.com/acme/greeting/aws"}}`
	for i, c := range []struct{ params, want string }{
		{`{"name":"delete_everything","arguments":{}}`, "delete_everything"},
		{`{"name":"get_module_details","arguments":{"module_id":42}}`, "module_id"},
		{`{"name":"get_module_details","arguments":{"module_id":"acme/greeting/aws","version":{}}}`, "version"},
		{`{"name":"get_module_details","arguments":"not an object"}`, "argument"},
		{`{"name":"search_modules","arguments":{"module_query":"` + strings.Repeat("x", 1<<20) + `"}}`, "longer than"},
		{`{"name":"get_module_details","arguments":{"module_id":"` + strings.Repeat("a/", 1<<19) + `"}}`, "longer than"},
	} {
		s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, c.params))
		m := s.receive(t)
		if got := m.text(); m.ID != i+1 || !strings.Contains(got, c.want) {
			t.Errorf("%.80s: %q, want an error naming %q", c.params, got, c.want)
		}
		s.send(t, `{"jsonrpc":"2.0","id":100,"method":"tools/call","params":`+good+`}`)
		if m := s.receive(t); m.ID != 100 || m.text() != "" || m.Result == nil {
			t.Errorf("a good call after %.80s: %+v", c.params, m)
		}
	}
}

// A client that sends calls and never reads the answers holds only its
// own server: once it goes (its pipes closed), Run returns.
func TestStdioClientNeverReads(t *testing.T) {
	s := startStdio(t)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_module_details","arguments":{"module_id":"tofu.example.com/acme/greeting/aws"}}}` + "\n"
	sent, some := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 200 {
			if i == 3 {
				close(some)
			}
			if _, err := io.WriteString(s.in, call); err != nil {
				return
			}
		}
	}()
	<-some // the server has taken calls, its answers wait
	s.outR.Close()
	s.in.Close()
	<-sent
	select {
	case <-s.done:
		s.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Run still serves a client that is gone")
	}
}
