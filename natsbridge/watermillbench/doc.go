// Package watermillbench measures natsbridge against watermill-nats, the
// ecosystem's usual NATS adapter, on the same workloads and the same
// embedded server. It is a module of its own so that natsbridge never
// depends on watermill; it holds benchmarks only:
//
//	cd natsbridge/watermillbench
//	go test -run '^$' -bench . -benchtime 20000x -count 6 > wm.txt
//	benchstat -col /impl wm.txt
package watermillbench
