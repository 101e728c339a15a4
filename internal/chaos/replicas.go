package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store/postgres"
	"github.com/agentwire/agentwire/internal/core/vault"
)

// ReplicaLeaseTTL is the device lease TTL of the replicas in a replica
// run: short, so the Turns of the replica the run kills are reaped by
// another one within seconds (the default is 15 s).
const ReplicaLeaseTTL = 3 * time.Second

// runReplicas is Run with cfg.Replicas Core processes on one PostgreSQL
// database (cfg.Store) behind the proxy, which sends each Runtime
// connection to the first replica that accepts it. The projects' API
// clients use the other replicas, so every request that needs a device
// connection is forwarded to its owner. Once a third of the workload was
// submitted the first replica, which holds both devices, is SIGKILLed and
// not started again: the Runtimes reconnect to the next replica, the dead
// one's leases expire and another replica reconciles its Turns once. The
// checker then proves the same properties as for one Core.
func runReplicas(ctx context.Context, cfg Config, res Result, start time.Time) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	keys := map[string]string{}
	issueArgs := func(args ...string) []string { return append([]string{"--store", cfg.Store}, args...) }
	for _, project := range []string{"p1", "p2"} {
		k, err := issueWith(cfg, issueArgs("--kind", "project", "--project", project)...)
		if err != nil {
			return res, err
		}
		keys[project] = k
		if err := os.WriteFile(filepath.Join(cfg.Dir, project+".key"), []byte(k), 0o600); err != nil {
			return res, fmt.Errorf("keep the API key: %w", err)
		}
	}
	devices := map[string]string{"dev-1": "p1", "dev-2": "p2"}
	for dev, project := range devices {
		if _, err := issueWith(cfg, issueArgs("--kind", "device", "--device", dev, "--project", project, "--out", filepath.Join(cfg.Dir, dev+".credential"))...); err != nil {
			return res, err
		}
	}
	// The replicas seal the Vault with one key (docs/deployment.md).
	key, err := vault.LoadKey(filepath.Join(cfg.Dir, "data-0", vault.KeyFile))
	if err != nil {
		return res, fmt.Errorf("the replicas' Vault key: %w", err)
	}
	addrs := make([]string, cfg.Replicas)
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return res, err
		}
		if i > 0 {
			dir := filepath.Join(cfg.Dir, fmt.Sprintf("data-%d", i))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return res, fmt.Errorf("replica data: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, vault.KeyFile), key, 0o600); err != nil {
				return res, fmt.Errorf("replica data: %w", err)
			}
		}
	}
	proxy, err := NewBalancer(addrs, cfg.Seed, cfg.Cuts)
	if err != nil {
		return res, err
	}
	defer proxy.Close()
	proxyURL := "http://" + proxy.Addr()
	cores := make([]*proc, cfg.Replicas)
	for i := range cores {
		cores[i] = &proc{name: fmt.Sprintf("core-%d", i), bin: cfg.Bin, log: filepath.Join(cfg.Dir, fmt.Sprintf("core-%d.log", i)), ready: "agentwire core: listening on ",
			args: func(gen int) []string {
				return []string{"core", "serve", "--listen", addrs[i], "--data", filepath.Join(cfg.Dir, fmt.Sprintf("data-%d", i)),
					"--store", cfg.Store, "--public-url", proxyURL, "--replica-url", "http://" + addrs[i],
					"--lease-ttl", ReplicaLeaseTTL.String(), "--placement-timeout", PlacementTimeout.String(),
					// A transcript per process: replica i's generation g is
					// number 1000*i+g for the checker.
					"--transcript", filepath.Join(cfg.Dir, fmt.Sprintf("frames-%d.jsonl", 1000*i+gen))}
			}}
		if err := cores[i].start(); err != nil {
			return res, err
		}
		defer cores[i].stop(20 * time.Second)
	}
	// p1 talks to replica 1, p2 to the last one: neither to the replica
	// the devices connect to first.
	clients := map[string]*client{
		"p1": newClient("http://"+addrs[1%cfg.Replicas], keys["p1"]),
		"p2": newClient("http://"+addrs[cfg.Replicas-1], keys["p2"]),
	}
	sessions, envArgs, err := setupSessions(ctx, cfg, clients, devices)
	if err != nil {
		return res, err
	}
	runtimes, err := startRuntimes(cfg, proxyURL, envArgs)
	for _, rt := range runtimes {
		defer rt.stop(30 * time.Second)
	}
	if err != nil {
		return res, err
	}

	w := &workload{seed: cfg.Seed, clients: clients, sessions: sessions, turns: cfg.Turns,
		turnBudget: min(cfg.Budget/3, 2*time.Minute), observed: map[string][]string{}}
	fmt.Fprintf(cfg.Out, "chaos: %d Sessions on 2 devices, %d Core replicas at %v, Runtimes through the balancer at %s\n", len(sessions), cfg.Replicas, addrs, proxy.Addr())
	workDone := make(chan struct{})
	go func() {
		w.run(ctx)
		close(workDone)
	}()
	// The fault: the first replica dies once a third of the Turns went in.
	killed := false
	for !killed {
		select {
		case <-workDone:
			killed = true
		case <-ctx.Done():
			return res, fmt.Errorf("the budget ended before the replica was killed: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond): // polls the workload's progress
			if w.submitted.Load() >= int64(cfg.Turns/3) {
				cores[0].kill()
				res.Kills[cores[0].name]++
				killed = true
				fmt.Fprintf(cfg.Out, "chaos: SIGKILLed %s (it held the devices) at %d submitted; it is not started again\n", cores[0].name, w.submitted.Load())
			}
		}
	}
	select {
	case <-workDone:
	case <-ctx.Done():
		fmt.Fprintf(cfg.Out, "chaos: the budget of %v ended before the workload did (%d of %d Turns submitted)\n", cfg.Budget, w.submitted.Load(), cfg.Turns)
	}
	proxy.SetCutting(false)
	recovery := w.recover(ctx, cfg.Turns)
	finalCtx, cancelFinal := context.WithTimeout(context.Background(), time.Minute)
	w.finalStates(finalCtx)
	cancelFinal()
	for _, rt := range runtimes {
		rt.stop(30 * time.Second)
	}
	for _, c := range cores {
		c.stop(20 * time.Second)
		res.CoreGens += c.generation()
	}
	res.Cuts = int(proxy.Cuts.Load())
	loadCtx, cancelLoad := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLoad()
	st, err := postgres.Open(loadCtx, cfg.Store)
	if err != nil {
		return res, fmt.Errorf("load evidence: %w", err)
	}
	defer st.Close()
	ev, err := LoadEvidenceFrom(loadCtx, cfg.Dir, st, w.sessionIDs(), w.observed)
	if err != nil {
		return res, err
	}
	res = finish(res, w, ev, recovery, start)
	reconciledOnce(&res, ev)
	return res, nil
}

// reconciledOnce counts the Turns a surviving replica reconciled after
// the killed one's leases expired, and reports a Turn reconciled twice
// (two replicas reaping one lease) as a violation of reaped_once.
func reconciledOnce(res *Result, ev Evidence) {
	for _, t := range ev.Turns {
		n := 0
		for _, e := range t.Events {
			if e.Type == "observation" && strings.Contains(string(e.Payload), `"cause":"core_replica_lost"`) {
				n++
			}
		}
		if n > 0 {
			res.ReplicaLost++
		}
		if n > 1 {
			res.Violations = append(res.Violations, Violation{TurnID: t.Turn.ID, Property: "reaped_once",
				Detail: fmt.Sprintf("reconciled %d times after its replica died", n)})
		}
	}
}
