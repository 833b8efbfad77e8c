// Package partitioner decides where MIG instances go and applies those decisions.
//
// It answers each request in the order reuse an idle instance, create one at the
// placement that keeps the most maximal layouts reachable, destroy idle instances
// to make room, or wait. Decisions are explicit plans executed through the gpu
// layer, serialised per GPU and rolled back on failure.
package partitioner
