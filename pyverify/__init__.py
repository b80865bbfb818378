"""pyverify: Lean 4 proofs about Power Law Graph Attention, tied to executable code."""

__version__ = "0.1.0"
