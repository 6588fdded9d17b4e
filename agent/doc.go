// Package agent is the facade through which agents reach capabilities:
// search, describe and run, each answered as one scope sees the catalogue.
package agent
