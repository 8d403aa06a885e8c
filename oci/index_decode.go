package oci

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// decodeIndex decodes an image index as OpenTofu does (encoding/json into
// ocispec.Index, docs/reference.md §1). A cold listing decodes thousands
// of them, where encoding/json (a validating pre-scan, then reflection)
// was a quarter of the proxy's CPU, so an index in the plain form
// registries hold (what `push` writes, and what image-spec's types
// marshal to) is read by plainIndex instead; anything else, or anything
// plainIndex is not sure of, goes to encoding/json. For what plainIndex
// accepts, both give the same value (FuzzPlainIndexAgrees).
func decodeIndex(b []byte, idx *ocispec.Index) error {
	if plainIndex(b, idx) {
		return nil
	}
	*idx = ocispec.Index{}
	return json.Unmarshal(b, idx)
}

// plainIndex decodes b into idx when b is an index in the plain form:
// the keys image-spec's types use, each spelled exactly and given once,
// strings of printable ASCII without escapes, sizes and the schema
// version as plain non-negative integers, no nulls, JSON whitespace
// anywhere. It is false for anything else (unknown keys, urls, data,
// subject, os.features, escapes, nulls, duplicates, numbers in any
// other form): encoding/json decides those, as OpenTofu does.
func plainIndex(b []byte, idx *ocispec.Index) bool {
	s := scanner{b: b}
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "schemaVersion":
			n, ok := s.integer()
			idx.SchemaVersion = int(n)
			return ok
		case "mediaType":
			return s.typeTo(&idx.MediaType)
		case "artifactType":
			return s.typeTo(&idx.ArtifactType)
		case "manifests":
			return s.descriptors(&idx.Manifests)
		case "annotations":
			return s.annotations(&idx.Annotations)
		}
		return false
	})
	return ok && s.end()
}

// scanner reads the plain form from b at i.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c (after whitespace).
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// plainBytes reads a string of printable ASCII without escapes, and
// returns its bytes in b.
func (s *scanner) plainBytes() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

func (s *scanner) plainString() (string, bool) {
	v, ok := s.plainBytes()
	return string(v), ok
}

func (s *scanner) stringTo(dst *string) bool {
	v, ok := s.plainString()
	*dst = v
	return ok
}

// typeTo is stringTo for a media or artifact type: the types of a
// provider index are the constants' strings, not copies (thousands of
// indexes are parsed and cached at once).
func (s *scanner) typeTo(dst *string) bool {
	v, ok := s.plainBytes()
	switch string(v) {
	case ocispec.MediaTypeImageManifest:
		*dst = ocispec.MediaTypeImageManifest
	case ocispec.MediaTypeImageIndex:
		*dst = ocispec.MediaTypeImageIndex
	case ArtifactTypeProviderTarget:
		*dst = ArtifactTypeProviderTarget
	case ArtifactTypeProvider:
		*dst = ArtifactTypeProvider
	default:
		*dst = string(v)
	}
	return ok
}

// maxPlainDigits keeps a plain integer within int64 (and int).
const maxPlainDigits = 18

// integer reads a non-negative integer without sign, fraction, exponent
// or leading zero.
func (s *scanner) integer() (int64, bool) {
	s.space()
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > maxPlainDigits || digits > 1 && s.b[start] == '0' {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	return n, true
}

// object reads an object, calling member for each key (each at most
// once, at most maxPlainMembers) with the scanner at its value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	var buf [8][]byte // the keys so far: most objects have fewer
	seen := buf[:0]
	for {
		key, ok := s.plainBytes()
		if !ok || !s.byte(':') || slices.ContainsFunc(seen, func(k []byte) bool { return bytes.Equal(k, key) }) || len(seen) == maxPlainMembers {
			return false
		}
		seen = append(seen, key)
		if !member(key) {
			return false
		}
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// maxPlainMembers bounds the members of one plain object (the duplicate
// check is quadratic); an object with more goes to encoding/json.
const maxPlainMembers = 32

// descriptors reads an array of descriptors; an empty array is an empty
// slice, as encoding/json makes it.
func (s *scanner) descriptors(dst *[]ocispec.Descriptor) bool {
	if !s.byte('[') {
		return false
	}
	out := make([]ocispec.Descriptor, 0, 16)
	if !s.byte(']') {
		for {
			if len(out) > MaxIndexEntries {
				return false // encoding/json reads it; ParseProviderIndex refuses it
			}
			out = append(out, ocispec.Descriptor{})
			if !s.descriptor(&out[len(out)-1]) {
				return false
			}
			if s.byte(']') {
				break
			}
			if !s.byte(',') {
				return false
			}
		}
	}
	*dst = out
	return true
}

func (s *scanner) descriptor(d *ocispec.Descriptor) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "mediaType":
			return s.typeTo(&d.MediaType)
		case "artifactType":
			return s.typeTo(&d.ArtifactType)
		case "digest":
			v, ok := s.plainString()
			d.Digest = digest.Digest(v)
			return ok
		case "size":
			var ok bool
			d.Size, ok = s.integer()
			return ok
		case "platform":
			d.Platform = &ocispec.Platform{}
			return s.platform(d.Platform)
		case "annotations":
			return s.annotations(&d.Annotations)
		}
		return false
	})
}

func (s *scanner) platform(p *ocispec.Platform) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "architecture":
			return s.stringTo(&p.Architecture)
		case "os":
			return s.stringTo(&p.OS)
		case "os.version":
			return s.stringTo(&p.OSVersion)
		case "variant":
			return s.stringTo(&p.Variant)
		}
		return false
	})
}

// annotations reads an object of strings into a new map.
func (s *scanner) annotations(dst *map[string]string) bool {
	m := map[string]string{}
	ok := s.object(func(key []byte) bool {
		v, ok := s.plainString()
		m[string(key)] = v
		return ok
	})
	*dst = m
	return ok
}
