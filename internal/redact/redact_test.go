package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET http://alice:s3cret@example.org/a: 401", "GET http://alice:REDACTED@example.org/a: 401"},
		{`Get "https://u:p%40ss@h:8443/x?y=1": EOF`, `Get "https://u:REDACTED@h:8443/x?y=1": EOF`},
		{"http://example.org/a?token=abc&x=1", "http://example.org/a?token=REDACTED&x=1"},
		{"http://example.org/a?x=1&Access_Token=abc#f", "http://example.org/a?x=1&Access_Token=REDACTED#f"},
		{"<a href=\"/r?sig=zz&amp;api_key=k1\">", "<a href=\"/r?sig=REDACTED&amp;api_key=REDACTED\">"},
		{"Authorization: Bearer abc.def", "Authorization: REDACTED"},
		{"sent Bearer eyJhbGciOi.x.y to", "sent Bearer REDACTED to"},
		{"Basic YWxpY2U6czNjcmV0", "Basic REDACTED"},
		{"HTTP basic authentication required", "HTTP basic authentication required"},
		{"http://example.org/a?page=2&keyword=x", "http://example.org/a?page=2&keyword=x"},
		{"mailto:alice@example.org", "mailto:alice@example.org"},
		{"http://alice@example.org/", "http://alice@example.org/"},
		{"", ""},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	r := Secrets("tok/en+1", "x")
	got := r("read tok/en+1 and tok%2Fen%2B1, x stays")
	if strings.Contains(got, "tok") || !strings.Contains(got, "x stays") {
		t.Errorf("got %q", got)
	}
}

// FuzzString checks that a password put into a URL's userinfo or a secret
// query parameter never survives.
func FuzzString(f *testing.F) {
	f.Add("user", "pw12", "tail")
	f.Add("", "p@ss:w", "/x?token=1")
	f.Fuzz(func(t *testing.T, user, pass, tail string) {
		if len(pass) < 4 || strings.ContainsAny(pass, " \t\r\n\v\f/?#\"'<>@") || strings.ContainsAny(user, " \t\r\n\v\f/?#\"'<>@:") {
			return
		}
		if strings.Contains(tail, pass) || strings.Contains("http://", pass) || strings.Contains(user, pass) ||
			strings.Contains("@example.org/"+Mask, pass) || strings.Contains(Mask, pass) {
			return
		}
		for _, tc := range []struct{ in, masked string }{
			{"GET http://" + user + ":" + pass + "@example.org/" + tail, "GET http://" + user + ":" + Mask + "@example.org/" + tail},
			{"http://example.org/?x=1&token=" + pass + " " + tail, "http://example.org/?x=1&token=" + Mask + " " + tail},
		} {
			s := tc.in
			if strings.ContainsAny(pass, "&;=") && strings.Contains(s, "token=") {
				continue
			}
			// The text as rightly masked can spell the password by itself
			// (user "000", password "000:": "http://000:REDACTED@…").
			if strings.Contains(tc.masked, pass) {
				continue
			}
			if got := String(s); strings.Contains(got, pass) {
				t.Fatalf("String(%q) = %q keeps %q", s, got, pass)
			}
		}
	})
}

// TestSecretsEscaped: a secret is found where it reads escaped, in a Go
// %q (url.Error, parse errors) or in a JSON line redacted after encoding.
func TestSecretsEscaped(t *testing.T) {
	const secret = `p&ss<"w\rd>`
	r := Secrets(secret)
	js, _ := json.Marshal(map[string]string{"error": "refused " + secret})
	for _, s := range []string{fmt.Sprintf("parse %q: bad", "http://h/"+secret), string(js)} {
		if got := r(s); strings.Contains(got, "ss") {
			t.Errorf("%s -> %s", s, got)
		}
	}
}

// FuzzSecrets checks that a known secret survives in none of the forms it
// is printed in: as is, in a Go %q, in JSON.
func FuzzSecrets(f *testing.F) {
	f.Add(`p&ss<"w\rd>`, "refused ")
	f.Add("tok/en+1", "GET ")
	f.Fuzz(func(t *testing.T, secret, pre string) {
		if len(secret) < 4 || strings.Contains(pre, secret) || strings.Contains(Mask, secret) || !utf8.ValidString(secret) {
			return
		}
		js, _ := json.Marshal(pre + secret)
		r := Secrets(secret)
		for _, s := range []string{pre + secret, fmt.Sprintf("%q", pre+secret), string(js)} {
			if got := r(s); strings.Contains(got, secret) || (s != pre+secret && strings.Contains(got, quoted(secret))) {
				t.Fatalf("Secrets(%q)(%q) = %q", secret, s, got)
			}
		}
	})
}

// TestSecretsWhole: a secret that holds another secret, or text String's
// patterns mask, is masked whole.
func TestSecretsWhole(t *testing.T) {
	r := Secrets("abcd1234", "abcd1234-XYZW", "s3cr3tv&token=zz")
	got := r("netrc abcd1234-XYZW header s3cr3tv&token=zz")
	for _, part := range []string{"XYZW", "s3cr3tv"} {
		if strings.Contains(got, part) {
			t.Errorf("%q left: %s", part, got)
		}
	}
}

// TestError: Error redacts the message, keeps errors.Is and errors.As,
// and leaves an error with nothing to redact (and nil) as it is.
func TestError(t *testing.T) {
	sentinel := errors.New("boom")
	se := &fieldErr{url: "http://u:pw-secret@h/x?token=tok-secret"}
	tests := []struct {
		name string
		err  error
		same bool
	}{
		{"nil", nil, true},
		{"clean", fmt.Errorf("GET http://h/x: %w", sentinel), true},
		{"userinfo", fmt.Errorf("GET http://u:pw-secret@h/x: %w", sentinel), false},
		{"query", fmt.Errorf("GET http://h/x?token=tok-secret: %w", sentinel), false},
		{"typed", fmt.Errorf("fetch: %w", se), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Error(tt.err)
			if tt.same {
				if got != tt.err {
					t.Fatalf("Error(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			for _, s := range []string{got.Error(), fmt.Sprintf("%v", got), fmt.Sprintf("%+v", got), fmt.Sprintf("%s", got)} {
				if strings.Contains(s, "secret") {
					t.Errorf("not redacted: %s", s)
				}
			}
			if !errors.Is(got, sentinel) && !errors.As(got, new(*fieldErr)) {
				t.Errorf("%v lost its chain", got)
			}
			if Error(got) != got {
				t.Error("redacting twice wraps twice")
			}
		})
	}
}

type fieldErr struct{ url string }

func (e *fieldErr) Error() string { return "GET " + e.url + ": Not Found" }

// TestAWSKeys: S3 credentials never survive in text: an access key ID
// (AKIA…, ASIA… for a session), the secret key and the session token
// written as the shared files, the environment or a JSON document write
// them, and the Credential of a SigV4 Authorization header or a presigned
// URL.
func TestAWSKeys(t *testing.T) {
	const (
		id     = "AKIAIOSFODNN7EXAMPLE"
		sessID = "ASIAJEXAMPLEXEG2JICE"
		secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		token  = "IQoJb3JpZ2luX2VjEXAMPLETOKEN+/="
	)
	for _, in := range []string{
		"aws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\naws_session_token=" + token,
		"AWS_ACCESS_KEY_ID=" + id + " AWS_SECRET_ACCESS_KEY=" + secret + " AWS_SESSION_TOKEN=" + token,
		`{"AccessKeyId":"` + sessID + `","SecretAccessKey":"` + secret + `","SessionToken":"` + token + `"}`,
		"Authorization: AWS4-HMAC-SHA256 Credential=" + id + "/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc",
		"GET https://b.s3.amazonaws.com/k?X-Amz-Credential=" + id + "%2F20260101&X-Amz-Signature=" + secret,
		"InvalidAccessKeyId: The AWS Access Key Id " + sessID + " does not exist",
	} {
		got := String(in)
		for _, s := range []string{id, sessID, secret, token} {
			if strings.Contains(got, s) {
				t.Errorf("String(%q) = %q keeps %q", in, got, s)
			}
		}
	}
	// Prose and look-alikes stay.
	for _, in := range []string{"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "AKIA alone", "the secret_access_key option"} {
		if got := String(in); got != in {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
}
