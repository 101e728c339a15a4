package memory

import (
	"context"
	"sort"

	"github.com/agentwire/agentwire/core/store"
)

// The Vault: sealed secrets by project and name.

type secretKey struct{ project, name string }

func (s *Store) PutSecret(ctx context.Context, sec store.Secret) error {
	if sec.Project == "" || sec.Name == "" || len(sec.Sealed) == 0 {
		return store.ErrInvalid
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[secretKey]store.Secret{}
	}
	k := secretKey{sec.Project, sec.Name}
	if old, ok := s.secrets[k]; ok {
		sec.CreatedAt = old.CreatedAt
	}
	sec.Sealed = append([]byte(nil), sec.Sealed...)
	s.secrets[k] = sec
	return nil
}

func (s *Store) GetSecret(ctx context.Context, project, name string) (store.Secret, error) {
	if err := s.lock(ctx); err != nil {
		return store.Secret{}, err
	}
	defer s.mu.Unlock()
	sec, ok := s.secrets[secretKey{project, name}]
	if !ok {
		return store.Secret{}, store.ErrNotFound
	}
	sec.Sealed = append([]byte(nil), sec.Sealed...)
	return sec, nil
}

func (s *Store) ListSecrets(ctx context.Context, project string) ([]store.Secret, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Secret
	for k, sec := range s.secrets {
		if k.project == project {
			sec.Sealed = append([]byte(nil), sec.Sealed...)
			out = append(out, sec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *Store) DeleteSecret(ctx context.Context, project, name string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := secretKey{project, name}
	if _, ok := s.secrets[k]; !ok {
		return store.ErrNotFound
	}
	delete(s.secrets, k)
	return nil
}
