module github.com/heraldgo/herald/broadcast/fanoutbench

go 1.26.6

require (
	github.com/ThreeDotsLabs/watermill v1.5.1
	github.com/heraldgo/herald v0.1.0
	go.uber.org/goleak v1.3.0
	tailscale.com v1.102.5
)

require (
	github.com/coder/websocket v1.8.14 // indirect
	github.com/go-json-experiment/json v0.0.0-20260214004413-d219187c3433 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/lithammer/shortuuid/v3 v3.0.7 // indirect
	github.com/oklog/ulid v1.3.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go4.org/mem v0.0.0-20240501181205-ae6ca9944745 // indirect
	go4.org/netipx v0.0.0-20231129151722-fdeea329fbba // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/exp v0.0.0-20260410095643-746e56fc9e2f // indirect
	golang.org/x/sys v0.47.0 // indirect
)
