package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's runtime profiles (/debug/pprof/: goroutines,
// heap, CPU) on addr until ctx ends; the soak test reads Core's goroutine
// count there, and an operator chasing a leak reads the rest.
//
// decision: only a loopback address is accepted. The profiles show
// request paths, memory contents by allocation site and the command line,
// and carry no authentication: they are for someone already on the
// machine.
func serveDebug(addr string, log *slog.Logger) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--debug-listen %q: only a loopback address is allowed (the profiles are unauthenticated)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("core: debug profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("core: debug listener", "err", err)
		}
	}()
	return func() {
		_ = hs.Close()
		<-done
	}, nil
}
