package main

import (
	"net"
	"testing"
	"time"
)

// Without --metrics-addr (a host install under systemd), metrics and probes
// listen on loopback only, not on every interface.
func TestMetricsListenOnLoopbackByDefault(t *testing.T) {
	n := newSimNode(t)
	var args []string
	all := n.args()
	for i := 0; i < len(all); i++ {
		if all[i] == "--metrics-addr" {
			i++ // and its value
			continue
		}
		args = append(args, all[i])
	}
	n.start(t, args)
	c, err := net.DialTimeout("tcp", "127.0.0.1:9477", time.Second)
	if err != nil {
		t.Fatalf("metrics on loopback: %v", err)
	}
	c.Close()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if !ok || ip.IP.IsLoopback() || ip.IP.To4() == nil {
			continue
		}
		tried++
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.IP.String(), "9477"), time.Second); err == nil {
			c.Close()
			t.Errorf("metrics answer on %s, want loopback only", ip.IP)
		}
	}
	if tried == 0 {
		t.Fatal("the host has no non-loopback IPv4 address to try")
	}
}
