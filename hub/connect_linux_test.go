package hub

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fullListener is a loopback port whose accept queue is full: the kernel drops further
// SYNs, so a connect to it hangs as to a host that does not answer.
func fullListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 16 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // this connect hung: the queue is full
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the accept queue never filled")
	return ""
}

// TestConnectTimeout: a Hub that never completes the TCP handshake fails each try after
// ConnectTimeout.
func TestConnectTimeout(t *testing.T) {
	addr := fullListener(t)
	c := &Client{Endpoint: "http://" + addr, Cache: Cache{Dir: t.TempDir()}, MaxRetries: 1,
		RetryWait: time.Millisecond, ConnectTimeout: 200 * time.Millisecond}
	_, err := pullWithin(t, c, tinyRef, 10*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != "connect" || !strings.Contains(err.Error(), "2 tries") {
		t.Fatalf("error %v, want a connect timeout after 2 tries", err)
	}
}
