// Package partitioner decides where MIG instances go and applies those decisions.
//
// It answers each request by reusing an idle instance, creating one, or
// destroying idle instances to make room, and otherwise says wait. Where it
// creates is the policy's choice: migpro (the default) weighs layouts by the
// node's recent and pending demand and treats idle instances as free space;
// reachability keeps the most maximal layouts reachable; first-fit takes the
// first GPU and the lowest slot. Decisions are explicit plans executed
// through the gpu layer, serialised per GPU and rolled back on failure; an
// instance in use is never destroyed. The recent demand decays over time
// (WithClock sets the clock); a reservation (Reserve, ReserveFor) holds one
// placement of a profile for a request that keeps waiting while the rest of
// the node keeps serving.
package partitioner
