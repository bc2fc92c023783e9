package hub

// Request-forgery tests. Nothing here may send a packet to a non-loopback
// address: every hub dials through the test's dialGuard (Config.DialControl,
// which sees the address actually dialled and refuses anything outside
// 127.0.0.0/8) and resolves names through fakeDNS (no DNS query leaves).
// The assertions are that private and link-local callbacks are refused
// before anything is dialled: the guard's Control hook is never reached.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func strictHub(t *testing.T) *testHub {
	return newTestHub(t, func(c *Config) { c.AllowPrivateCallbacks = false })
}

func TestSSRFRefusesPrivateCallbacksBeforeDialling(t *testing.T) {
	th := strictHub(t)
	th.dns.set("intranet.example", fixed("10.1.2.3"))
	th.dns.set("metadata.example", fixed("169.254.169.254"))
	th.dns.set("localhost.", fixed("127.0.0.1"))
	th.dns.set("localhost", fixed("127.0.0.1"), fixed("::1"))
	th.dns.set("mixed.example", fixed("93.184.215.14"), fixed("192.168.0.10"))
	th.dns.set("v6.example", fixed("fd00::1"))
	for _, cb := range []string{
		"http://127.0.0.1:8080/cb",
		"http://127.1.2.3/cb",
		"http://10.0.0.1/cb",
		"http://172.16.5.4/cb",
		"http://192.168.1.1/cb",
		"http://169.254.169.254/latest/meta-data/",
		"http://100.64.0.1/cb",
		"http://0.0.0.0/cb",
		"http://224.0.0.1/cb",
		"http://[::1]/cb",
		"http://[fe80::1]/cb",
		"http://[fc00::1]/cb",
		"http://[::ffff:10.0.0.1]/cb",
		"http://[::ffff:127.0.0.1]/cb",
		"http://[64:ff9b::a00:1]/cb",
		"http://2130706433/cb", // 127.0.0.1 in other spellings
		"http://0x7f000001/cb",
		"http://0177.0.0.1/cb",
		"http://127.1/cb",
		"http://localhost/cb",
		"http://localhost./cb",
		"http://intranet.example/cb",
		"http://metadata.example/cb",
		"http://mixed.example/cb", // one bad address is enough
		"http://v6.example/cb",
		"http://unknown.example/cb", // does not resolve
	} {
		code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", cb))
		if code != http.StatusBadRequest || !strings.Contains(msg, "refused") {
			t.Errorf("%s: %d %q, want 400 refused", cb, code, msg)
		}
	}
	if calls, _ := th.guard.snapshot(); calls != 0 {
		t.Fatalf("the hub dialled %d times; it must refuse before dialling", calls)
	}
	if th.Stats().PendingVerifications != 0 {
		t.Fatal("a refused callback was queued for verification")
	}
	for _, q := range th.dns.asked {
		if strings.Contains(q, "0x7f") || q == "2130706433" || q == "0177.0.0.1" {
			t.Errorf("an ambiguous IP spelling was sent to the resolver: %s", q)
		}
	}
}

// DNS rebinding: the name resolves to a public address when the request
// is checked and to a private one when the hub dials; the dial-time check
// refuses it. The public address is never dialled either (the guard would
// record it), because the verification only ever dials the second answer.
func TestSSRFRebindingRefusedAtDial(t *testing.T) {
	th := strictHub(t)
	n := 0
	th.dns.set("rebind.example", func() net.IP {
		n++
		if n == 1 {
			return net.IPv4(93, 184, 215, 14)
		}
		return net.IPv4(10, 0, 0, 7)
	})
	code, msg := th.post(t, form("hub.mode", "subscribe", "hub.topic", topicA, "hub.callback", "http://rebind.example/cb"))
	if code != http.StatusAccepted {
		t.Fatalf("%d %s", code, msg)
	}
	th.waitNoPending(t)
	if calls, refused := th.guard.snapshot(); calls != 0 || len(refused) != 0 {
		t.Fatalf("dialled %d times (%v)", calls, refused)
	}
	if th.Stats().Subscriptions != 0 {
		t.Fatal("rebinding callback became a subscription")
	}
}

// The last line of the guard runs in net.Dialer.Control on the address
// actually dialled.
func TestSSRFControlChecksDialledAddress(t *testing.T) {
	th := strictHub(t)
	for _, a := range []string{"10.0.0.1:80", "127.0.0.1:80", "[fe80::1]:443", "169.254.169.254:80", "[::ffff:192.168.1.1]:80"} {
		if err := th.control("tcp", a, nil); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%s) = %v", a, err)
		}
	}
	if calls, _ := th.guard.snapshot(); calls != 0 {
		t.Fatalf("the test hook ran %d times after a refusal", calls)
	}
	// A public address passes the hub's check and reaches the test hook,
	// which refuses it: no packet is sent either way.
	if err := th.control("tcp", "93.184.215.14:80", nil); err == nil || errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("public address: %v (want the test guard's refusal)", err)
	}
	th.guard.mu.Lock()
	th.guard.refused = nil // that refusal was the point
	th.guard.mu.Unlock()
}

// The thin-ping topic fetch goes through the same guard.
func TestSSRFTopicFetchRefused(t *testing.T) {
	th := strictHub(t)
	th.dns.set("intranet.example", fixed("10.9.9.9"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://intranet.example/feed", "http://[::1]:9/feed"} {
		if _, _, err := th.fetchTopic(ctx, u); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("fetch %s: %v", u, err)
		}
	}
	if calls, _ := th.guard.snapshot(); calls != 0 {
		t.Fatalf("dialled %d times", calls)
	}
}

func TestBlockedRanges(t *testing.T) {
	th := strictHub(t)
	for host, want := range map[string]bool{
		"8.8.8.8": false, "93.184.215.14": false, "2606:4700::1111": false,
		"10.255.255.255": true, "172.31.0.1": true, "172.32.0.1": false, "198.18.0.1": true,
		"::": true, "2002:a00:1::": true, "ff02::1": true,
	} {
		err := th.checkHost(context.Background(), host)
		if (err != nil) != want {
			t.Errorf("%s: refused=%v, want %v", host, err != nil, want)
		}
	}
}
