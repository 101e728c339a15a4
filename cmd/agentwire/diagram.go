package main

import "io"

func runDiagram(args []string, stdout, stderr io.Writer) error { return errUsage }
