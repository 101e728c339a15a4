// Package sdkcheck parses the scripted model endpoint's streams with the
// official OpenAI and Anthropic Go SDKs, as a second reader of their
// shapes.
//
// It is a module of its own so that the SDKs (large, with dependencies
// of their own) stay out of the agentwire module: its tests run only when
// asked for, from this directory:
//
//	go test -race ./...
package sdkcheck
