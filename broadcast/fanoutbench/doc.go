// Package fanoutbench compares herald's broadcast with the in-process
// publish/subscribe libraries a Go user would pick instead: tailscale's
// eventbus (tailscale.com/util/eventbus) and watermill's gochannel
// (github.com/ThreeDotsLabs/watermill/pubsub/gochannel). Every
// implementation fans each value out to every subscriber, loses none,
// and is measured the same way: one publisher, N subscribers each
// reading in a goroutine of its own, the time per value published until
// every subscriber has read every value.
//
//	cd broadcast/fanoutbench && go test -run '^$' -bench . -count 10 | tee new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl new.txt
//
// It is a module of its own so that neither tailscale nor watermill is
// ever a requirement of herald's modules. watermill carries []byte
// payloads: its subscribers get a message whose payload is the value's
// bytes, made once (no encoding is measured), and acknowledge it.
package fanoutbench
