package agent

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"unicode"

	"github.com/migpro/migpro/client"
)

// FuzzLocalAPIRequest drives the local API's request decoding (the body of
// POST /v1/alloc and /v1/free) with arbitrary bytes. It must never panic;
// whatever it accepts has an owner that cannot forge a line where it is
// printed, and a body past maxBody is never accepted.
func FuzzLocalAPIRequest(f *testing.F) {
	for _, s := range []string{
		`{"profile":"1g.5gb","owner":"job"}`,
		`{"profile":"1g.5gb","owner":"a\nb"}`,
		`{"profile":"1g.5gb","owner":"\u001b[31m"}`,
		`{"name":"migpro.dev/mig=MIG-1"}`,
		`null`, `{"profile":1}`, `{"x":1}`, `{"profile":"a"}{"profile":"b"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", client.PathAlloc, bytes.NewReader(body))
		var alloc client.AllocRequest
		if err := decodeBody(req, &alloc); err == nil {
			if len(body) > maxBody {
				t.Fatalf("accepted a %d-byte body", len(body))
			}
			if validOwner(alloc.Owner) == nil {
				for _, r := range alloc.Owner {
					if unicode.IsControl(r) || (!unicode.IsPrint(r) && r != ' ') {
						t.Fatalf("owner %q accepted with %U", alloc.Owner, r)
					}
				}
				if len(alloc.Owner) > maxOwner {
					t.Fatalf("owner of %d bytes accepted", len(alloc.Owner))
				}
			}
		}
		req = httptest.NewRequest("POST", client.PathFree, bytes.NewReader(body))
		var free client.FreeRequest
		_ = decodeBody(req, &free)
	})
}
