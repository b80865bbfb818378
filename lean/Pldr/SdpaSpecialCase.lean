module

public import Pldr.Attention

/-!
# SDPA is the special case `G = I` of PLGA  (`[sdpa_special_case]`)

Paper: PLGA generalises scaled dot-product attention; replacing the whole metric
pipeline (steps 1–6) by the identity recovers SDPA exactly. We prove it at the three
levels the spec names (scores, attention rows, outputs) and for an *arbitrary* row
normaliser (softmax, causal softmax, or anything else), and for the PLGA head whose
metric map is the constant identity.

Abstracted: the row normaliser is an arbitrary function; the scale `τ` is arbitrary.
Nothing about `exp` is used. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α] {S dk dv : Nat}

/-- [sdpa_special_case] With `G = I` the PLGA scores `τ Q G Kᵀ` are the SDPA scores
`τ Q Kᵀ`. -/
theorem sdpa_special_case_scores (τ : α) (Q K : Mat α S dk) :
    scores τ Q 1 K = sdpaScores τ Q K := by
  simp only [scores, sdpaScores, Mat.mul_one]

/-- [sdpa_special_case] With `G = I` the attention rows (weights) are those of SDPA, for
any row normaliser. -/
theorem sdpa_special_case_weights (nrm : RowNorm α S) (τ : α) (Q K : Mat α S dk) :
    weights nrm (scores τ Q 1 K) = weights nrm (sdpaScores τ Q K) := by
  rw [sdpa_special_case_scores]

/-- [sdpa_special_case] With `G = I`, attention with a metric is exactly SDPA — scores,
rows and outputs — for any row normaliser `nrm`. -/
theorem sdpa_special_case (nrm : RowNorm α S) (τ : α) (Q K : Mat α S dk) (V : Mat α S dv) :
    attend nrm τ Q 1 K V = sdpa nrm τ Q K V := by
  simp only [attend, sdpa, sdpa_special_case_scores]

/-- [sdpa_special_case] The PLGA head whose metric map is constantly the identity is SDPA. -/
theorem sdpa_special_case_head (nrm : RowNorm α S) (τ : α) (Q K : Mat α S dk)
    (V : Mat α S dv) :
    plgaHeadWith nrm τ (fun _ => 1) Q K V = sdpa nrm τ Q K V :=
  sdpa_special_case nrm τ Q K V

end Pldr

end
