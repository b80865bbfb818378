module

public import Pldr.Positivity

/-!
# The density operator is positive semidefinite  (`[density_psd]`)

Paper (Prop. 3.6): the density operator `D = Qᵀ Q` of a head is a symmetric positive
semidefinite `dk × dk` matrix; its quadratic form is `x D xᵀ = ‖Q xᵀ‖²`. For a single
query row (`S = 1`) it is the outer product `qᵀ q`, of rank one: every `2 × 2` minor
vanishes.

* `density_psd`: `Dᵀ = D` and `x D xᵀ ≥ 0` for every row vector `x`.
* `density_psd_quadratic`: `x D xᵀ = Σ_i (Q xᵀ)_i²` (exact identity).
* `density_psd_rank_one`: for `S = 1`, `D i j · D k l - D i l · D k j = 0`.

Nothing is abstracted: this is exact algebra over any ordered field (the real numbers
included). There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- [density_psd] `D = Qᵀ Q` is symmetric. -/
theorem density_psd_symm {S dk : Nat} (Q : Mat α S dk) : (gram Q)ᵀ = gram Q := by
  simp only [gram]; rw [Mat.transpose_mul, Mat.transpose_transpose]

/-- [density_psd] The quadratic form of `D = Qᵀ Q` is the squared norm of `Q xᵀ`:
`x D xᵀ = Σ_i (Q xᵀ)_i²`. -/
theorem density_psd_quadratic {S dk : Nat} (Q : Mat α S dk) (x : Mat α 1 dk) :
    (x ⬝ gram Q ⬝ xᵀ) 0 0 = finSum fun i => (Q ⬝ xᵀ) i 0 * (Q ⬝ xᵀ) i 0 := by
  have h : x ⬝ gram Q ⬝ xᵀ = (Q ⬝ xᵀ)ᵀ ⬝ (Q ⬝ xᵀ) := by
    simp only [gram]
    rw [Mat.transpose_mul, Mat.transpose_transpose, ← Mat.mul_assoc x Qᵀ Q,
      Mat.mul_assoc (x ⬝ Qᵀ) Q xᵀ]
  rw [h]; rfl

/-- [density_psd] Prop. 3.6: the density operator `D = Qᵀ Q` is symmetric and positive
semidefinite: `Dᵀ = D` and `x D xᵀ ≥ 0` for every row vector `x`. -/
theorem density_psd {S dk : Nat} (Q : Mat α S dk) :
    (gram Q)ᵀ = gram Q ∧ ∀ x : Mat α 1 dk, 0 ≤ (x ⬝ gram Q ⬝ xᵀ) 0 0 := by
  refine ⟨density_psd_symm Q, fun x => ?_⟩
  rw [density_psd_quadratic]
  exact finSum_nonneg fun i => mul_self_nonneg' _

/-- [density_psd] For a single query row (`S = 1`), `D = qᵀ q` has rank one: every
`2 × 2` minor vanishes. -/
theorem density_psd_rank_one {dk : Nat} (Q : Mat α 1 dk) (i j k l : Fin dk) :
    gram Q i j * gram Q k l - gram Q i l * gram Q k j = 0 := by
  simp only [gram, Mat.mul_apply, Mat.transpose_apply, finSum_one]
  grind

end Pldr

end
