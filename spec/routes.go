package spec

// checkInstances checks that every drive finds an instance of the identity
// its machine declares: a drive keyed by the envelope id needs a message
// whose id is that identity; the connection's machine is addressed as the
// connection and nothing else is; an alias or a delivery ID is looked up
// only if some drive of the same machine registers one.
func checkInstances(c *Catalog, model *Model, errs *errorList) {
	aliases := map[*Machine]map[string]bool{}
	deliveries := map[*Machine]bool{}
	for _, msg := range c.Messages {
		for _, dr := range msg.Drives {
			for _, r := range dr.Registers {
				if r.Alias != "" {
					if aliases[dr.Machine] == nil {
						aliases[dr.Machine] = map[string]bool{}
					}
					aliases[dr.Machine][r.Alias] = true
				} else {
					deliveries[dr.Machine] = true
				}
			}
		}
	}
	for _, msg := range c.Messages {
		for _, dr := range msg.Drives {
			m := dr.Machine
			if m.Instance == "" {
				continue // the machine file reports its own missing instance
			}
			conn := m.Instance == "connection"
			switch k := dr.Instance.Kind; {
			case conn != (k == InstanceConnection):
				if conn {
					errs.add(dr.Pos, "message %q drives %s, whose one instance is the connection: give the drive instance: connection", msg.Type, m.Name)
				} else {
					errs.add(dr.Pos, "message %q addresses the connection, but %s's instances are keyed by %s", msg.Type, m.Name, m.Instance)
				}
			case k == InstanceByID:
				ids := dr.IDs
				if ids == nil {
					ids = msg.IDs
				}
				found := false
				for _, id := range ids {
					found = found || id.Name == m.Instance
				}
				if !found {
					errs.add(dr.Pos, "message %q carries no %s ID in its envelope, but %s's instances are keyed by one: say where the drive finds it (instance: {field: …}, {id_and: …}, {alias: …} or {delivery: …})", msg.Type, m.Instance, m.Name)
				}
			case k == InstanceByAlias && !aliases[m][dr.Instance.Alias]:
				errs.add(dr.Pos, "message %q looks %s up by alias %q, which no drive of %s registers", msg.Type, m.Name, dr.Instance.Alias, m.Name)
			case k == InstanceByDelivery && !deliveries[m]:
				errs.add(dr.Pos, "message %q looks %s up by delivery ID, but no drive of %s registers one", msg.Type, m.Name, m.Name)
			}
		}
	}
}
