// Package shop declares, in a package of its own, a type that tests of
// natsbridge share a topic with: the same JSON shape as their own Order,
// as another service in another repository would declare it.
package shop

// Order is an order as another service declares it.
type Order struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}
