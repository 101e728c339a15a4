package peer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentwire/agentwire/fsm"
)

// step fires event e on instance i and drains the effects the step asked
// for: timers are armed and disarmed here, sends and actions go through the
// app's binding. The step is complete before any effect runs, so an effect
// that fails leaves a fully applied step behind; the failure is logged,
// counted and returned.
func (d *Driver) step(i *Instance, e fsm.EventID, ev *Event) error {
	t := i.Table()
	ev.Inst, ev.Key, ev.d = i, i.Key, d
	d.out.Reset()
	err := i.in.Step(e, ev, d.binding(t.Name), &d.out)
	obs, _ := d.cfg.App.(Observer)
	for _, s := range d.out.Steps {
		d.stats.Steps[s.Disposition()]++
		d.logStep(i, s, ev)
		if obs != nil {
			obs.Stepped(ev, s)
		}
	}
	var effErr error
	for n := range d.out.Effects {
		if perr := d.perform(i, &d.out.Effects[n], ev); perr != nil && effErr == nil {
			effErr = perr
		}
	}
	if d.out.Moved() {
		d.moved = append(d.moved, i)
	}
	if i.Terminal() && i.settled.IsZero() {
		// A settled instance arms nothing: its table stopped every timer on
		// the way in (the loader checks the armed sets), and clearing them
		// here keeps a table bug from firing into a settled instance.
		d.dropInstanceDeadlines(i)
		for n := range i.deadlines {
			i.deadlines[n].armed = false
		}
		i.settled = d.cfg.Clock.Now()
		d.noteDeadline(i.settled.Add(d.cfg.Limits.Retention))
		d.noteSettled(i)
	}
	// The step's argument goes with the step: the scratch Event holds the
	// frame, which aliases the buffer it was read into, and an idle
	// connection would keep its last heartbeat for good (issue 21).
	d.scratch = Event{}
	if err != nil {
		return err
	}
	return effErr
}

func (d *Driver) perform(i *Instance, p *fsm.Pending, ev *Event) error {
	t := i.Table()
	ef := p.Effect
	switch ef.Kind {
	case fsm.EffectStart:
		d.gen++
		d.dropDeadline(i.deadlines[ef.Timer-1])
		i.deadlines[ef.Timer-1] = deadline{at: d.cfg.Clock.Now().Add(d.duration(t, ef.Timer)), gen: d.gen, armed: true}
		d.noteDeadline(i.deadlines[ef.Timer-1].at)
		d.noteTimed(i)
		return nil
	case fsm.EffectStop:
		d.gen++
		d.dropDeadline(i.deadlines[ef.Timer-1])
		i.deadlines[ef.Timer-1] = deadline{gen: d.gen}
		return nil
	}
	fr := &d.firing
	fr.Table, fr.From, fr.Event, fr.To, fr.Arg = t, p.From, p.Event, p.To, ev
	err := d.binding(t.Name).Perform(ef, fr)
	fr.Arg = nil
	if err != nil {
		d.stats.EffectErrors++
		err = &fsm.EffectError{
			Machine: t.Name,
			From:    t.StateName(p.From),
			Event:   t.EventName(p.Event),
			To:      t.StateName(p.To),
			Effect:  t.EffectString(ef),
			Err:     err,
		}
		log := d.cfg.Logger.With("conn", d.cfg.Label, "instance", i.Key.String())
		if ev.Msg != nil {
			log = log.With("trace_id", ev.Trace().TraceIDString())
		}
		log.Warn("effect failed", "err", err)
		return err
	}
	return nil
}

// duration is a timer's duration: the table's, unless local policy
// overrides it.
func (d *Driver) duration(t *fsm.Table, tm fsm.TimerID) (dur time.Duration) {
	decl := &t.Timers[tm-1]
	if over, ok := d.cfg.Durations[t.Name+"."+decl.Name]; ok && over > 0 {
		return over
	}
	return decl.Duration
}

func (d *Driver) logStep(i *Instance, s fsm.Step, ev *Event) {
	log := d.cfg.Logger
	level := slog.LevelDebug
	if s.Disposition() == fsm.Rejected {
		level = slog.LevelInfo
	}
	if !log.Enabled(context.Background(), level) {
		return
	}
	t := i.Table()
	attrs := []slog.Attr{
		slog.String("conn", d.cfg.Label),
		slog.String("machine", t.Name),
		slog.String("instance", boundedID(i.Key.ID)),
		slog.String("event", t.EventName(s.Event())),
		slog.String("from", t.StateName(s.From())),
		slog.String("to", t.StateName(s.To())),
		slog.String("disposition", s.Disposition().String()),
	}
	if r := s.Reason(); r != "" {
		attrs = append(attrs, slog.String("reason", r))
	}
	if ev.Msg != nil {
		// The frame's trace (or the local one minted for it) ties the step
		// to the peer's log lines for the same frame.
		attrs = append(attrs, slog.String("trace_id", ev.Trace().TraceIDString()))
	}
	log.LogAttrs(context.Background(), level, "step", attrs...)
}

// flushMoved hands the instances that moved during one delivery to the
// saver, once each.
func (d *Driver) flushMoved() {
	if len(d.moved) == 0 {
		return
	}
	if d.cfg.Saver != nil {
		seen := make(map[*Instance]bool, len(d.moved))
		uniq := d.moved[:0]
		for _, i := range d.moved {
			if !seen[i] {
				seen[i] = true
				uniq = append(uniq, i)
			}
		}
		d.cfg.Saver(uniq)
	}
	d.moved = d.moved[:0]
}

var errRejected = fsm.ErrRejected

func isRejection(err error) bool { return errors.Is(err, errRejected) }
