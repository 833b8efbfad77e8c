// Package partitioner decides where MIG instances go and applies those decisions.
//
// It answers each request by reusing an idle instance, creating one, or
// destroying idle instances to make room, and otherwise says wait. Where it
// creates is the policy's choice: migpro (the default) weighs layouts by the
// node's workload mix (mix.go: the requests it served lately and those
// waiting now) and treats idle instances as free space;
// reachability keeps the most maximal layouts reachable; first-fit takes the
// first GPU and the lowest slot. Decisions are explicit plans executed
// through the gpu layer, serialised per GPU and rolled back on failure; an
// instance in use is never destroyed. Each decision generates the ways to
// meet a request, admits those the reservation allows (once, reserve.go),
// and orders the rest (decide.go). The mix decays over time
// (WithClock sets the clock); a reservation (Reserve, ReserveFor) holds one
// placement of a profile for a request that keeps waiting while the rest of
// the node keeps serving. A caller that takes any instance holding its
// profile (AllocateHolding) is given a larger one when its own must wait
// (substitute.go), and the wider profile of the same memory slots where its
// own would leave a compute slice idle (widen.go).
package partitioner
