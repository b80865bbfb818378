module

public import Pldr.Attention

/-!
# Softmax is invariant under a constant shift of its row  (`[softmax_shift]`)

Paper/reference: the softmax of a score row does not change when one constant is added
to every entry; this is why the reference may subtract the row maximum, and why a
per-row constant in the scores is invisible. We prove it for masked softmax (any mask),
hence for plain and causal softmax, and for whole score matrices shifted row by row.

Abstracted: `exp` is an arbitrary `ExpMap` (`exp (a + b) = exp a * exp b`, `exp a > 0`);
only `exp c ≠ 0` and the addition law are used. Masking is exact (weight `0`), see
`Pldr.Attention`. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- [softmax_shift] Masked softmax is invariant under adding one constant `c` to every
entry of the row (whatever the mask). -/
theorem softmax_shift {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α)
    (c : α) : msoftmax E mask (fun j => x j + c) = msoftmax E mask x := by
  funext j
  simp only [msoftmax]
  have hZ : finSum (fun l => if mask l = true then E.exp (x l + c) else 0) =
      finSum (fun l => if mask l = true then E.exp (x l) else 0) * E.exp c := by
    rw [finSum_mul]; congr 1; funext l
    split
    · rw [E.exp_add]
    · grind
  rw [hZ]
  have hc := E.exp_ne_zero c
  split
  · rw [E.exp_add]; grind
  · rfl

/-- [softmax_shift] Plain softmax is invariant under a constant shift of its row. -/
theorem softmax_shift_unmasked {n : Nat} (E : ExpMap α) (x : Fin n → α) (c : α) :
    softmax E (fun j => x j + c) = softmax E x :=
  softmax_shift E _ x c

/-- [softmax_shift] Causal softmax: adding a constant `c i` to each row `i` of a score
matrix leaves every attention row unchanged. -/
theorem softmax_shift_rows {n : Nat} (E : ExpMap α) (M : Fin n → Fin n → α) (c : Fin n → α) :
    weights (causalSoftmax E) (fun i j => M i j + c i) = weights (causalSoftmax E) M := by
  funext i
  exact softmax_shift E (causalMask i) (M i) (c i)

/-- The constant map `1` is an abstract exponential on any ordered field, so the
hypotheses of the softmax theorems are satisfiable in core Lean (e.g. over `Rat`). The
real exponential is the intended instance. -/
@[expose] def ExpMap.one : ExpMap α where
  exp := fun _ => 1
  exp_add := fun _ _ => by grind
  exp_pos := fun _ => OrderedRing.zero_lt_one

/-- Concrete instance over `Rat`: softmax of a row of three equal scores is uniform,
and stays so after a shift. -/
theorem softmax_shift_rat_example :
    softmax (ExpMap.one (α := Rat)) (fun (_ : Fin 3) => (5 : Rat)) 0 = 1 / 3 ∧
    softmax (ExpMap.one (α := Rat)) (fun (_ : Fin 3) => (5 : Rat) + 7) 0 = 1 / 3 := by
  refine ⟨?_, ?_⟩ <;>
  · simp only [softmax, msoftmax, ExpMap.one, finSum_succ, finSum_zero_len]
    grind

end Pldr

end
