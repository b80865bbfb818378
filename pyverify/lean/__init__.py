"""The Lean bridge: toolchain set-up, build and audit, theorem manifest."""
