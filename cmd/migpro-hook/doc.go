// Command migpro-hook is migpro's OCI hook. Run it as a createRuntime (CDI)
// or prestart (podman hooks.d) hook to register a MIG container with the
// agent and mount its telemetry socket; as a poststop hook to deregister.
//
//	migpro-hook [--agent-socket PATH] [--timeout D] [--fail-closed] [--shim PATH] [--log-file PATH] [STAGE]
//
// The container state comes on stdin. STAGE is createRuntime, prestart or
// poststop; without it the state's status decides.
//
// The binary imports no cgo (the package list is checked by a test), so it
// is statically linked however it is built, and no LD_PRELOAD or
// LD_LIBRARY_PATH in its environment can run code in it. It never executes
// anything, so its environment reaches nothing else either.
package main
