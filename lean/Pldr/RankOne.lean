module

public import Pldr.Algebra.Matrix

/-!
# The learned singularity: generators with identical rows  (`[rank_one_generator]`)

Paper (Prop. 3.9): a generator whose rows are all equal, `A = 1 αᵀ`, is singular: it has
rank at most one (every `2 × 2` minor vanishes), so `det A = 0` as soon as `dk ≥ 2`;
every entrywise map (in particular iSwiGLU, `+ ε`, and Hadamard powers with an exponent
matrix that also has identical rows) keeps the rows identical, so the singularity
propagates through the metric pipeline's entrywise stages. Also `A² = (Σ_j α_j) A`
(the row sum is the nonzero eigenvalue).

* `IdenticalRows A`; `rowsOf α = 1 αᵀ` (`rowsOf_eq_mul`); `identicalRows_iff`.
* `det`: the determinant by cofactor expansion along the first row (core Lean has
  none); `det_eq_zero_of_identicalRows` for `n ≥ 2`.
* `rank_one_generator`: minors vanish, `det = 0`, entrywise maps keep identical rows.

Nothing is abstracted (exact algebra over any commutative ring); the Hadamard power is
any binary entrywise map, so it covers the `PowMap` real power and genuine powers alike.
There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [CommRing α]

/-- All rows of `A` are equal. -/
@[expose] def IdenticalRows {m n : Nat} (A : Mat α m n) : Prop := ∀ i i' j, A i j = A i' j

/-- The matrix `1 αᵀ` whose every row is `α`. -/
@[expose] def rowsOf {m n : Nat} (a : Fin n → α) : Mat α m n := fun _ j => a j

/-- `rowsOf α` is the product of the column of ones and the row `α`. -/
theorem rowsOf_eq_mul {m n : Nat} (a : Fin n → α) :
    (rowsOf a : Mat α m n) = (fun _ _ => 1 : Mat α m 1) ⬝ (fun _ j => a j : Mat α 1 n) := by
  apply Mat.ext; intro i j
  simp only [rowsOf, Mat.mul_apply, finSum_one]; grind

/-- A matrix with at least one row has identical rows iff it is `1 αᵀ` for some `α`. -/
theorem identicalRows_iff {m n : Nat} (A : Mat α (m + 1) n) :
    IdenticalRows A ↔ ∃ a : Fin n → α, A = rowsOf a := by
  constructor
  · intro h; exact ⟨A 0, Mat.ext fun i j => h i 0 j⟩
  · rintro ⟨a, rfl⟩; intro i i' j; rfl

/-- `(-1)^n`. -/
@[expose] def altSign : Nat → α
  | 0 => 1
  | n + 1 => -altSign n

/-- `skipIdx j l`: the `l`-th index of `Fin (n + 1)` after deleting `j` (the column map of
a minor). -/
@[expose] def skipIdx {n : Nat} (j : Fin (n + 1)) (l : Fin n) : Fin (n + 1) :=
  if l.val < j.val then ⟨l.val, by omega⟩ else ⟨l.val + 1, by omega⟩

/-- The determinant, by cofactor (Laplace) expansion along the first row:
`det M = Σ_j (-1)^j M₀ⱼ det(M without row 0 and column j)`. -/
@[expose] def det : (n : Nat) → Mat α n n → α
  | 0, _ => 1
  | n + 1, M => finSum fun j : Fin (n + 1) =>
      altSign j.val * M 0 j * det n (fun i l => M i.succ (skipIdx j l))

/-- The `1 × 1` determinant is the entry. -/
theorem det_one (N : Mat α 1 1) : det 1 N = N 0 0 := by
  show finSum (fun j : Fin 1 => altSign j.val * N 0 j *
    det 0 (fun i l => N i.succ (skipIdx j l))) = N 0 0
  rw [finSum_one]
  show (1 : α) * N 0 0 * 1 = N 0 0
  grind

/-- The `2 × 2` determinant is `M₀₀ M₁₁ - M₀₁ M₁₀`. -/
theorem det_two (M : Mat α 2 2) : det 2 M = M 0 0 * M 1 1 - M 0 1 * M 1 0 := by
  show finSum (fun j : Fin 2 => altSign j.val * M 0 j *
    det 1 (fun i l => M i.succ (skipIdx j l))) = _
  rw [finSum_two]
  simp only [det_one]
  show (1 : α) * M 0 0 * M 1 1 + (-1) * M 0 1 * M 1 0 = _
  grind

/-- Minors of a matrix with identical rows have identical rows. -/
theorem identicalRows_minor {n : Nat} {M : Mat α (n + 1) (n + 1)} (h : IdenticalRows M)
    (j : Fin (n + 1)) : IdenticalRows (fun i l => M (Fin.succ i) (skipIdx j l) : Mat α n n) := by
  intro i i' l; exact h _ _ _

/-- A square matrix of size `n ≥ 2` with identical rows has determinant `0`. -/
theorem det_eq_zero_of_identicalRows : ∀ (k : Nat) (M : Mat α (k + 2) (k + 2)),
    IdenticalRows M → det (k + 2) M = 0
  | 0, M, h => by
    rw [det_two]; rw [h 1 0 1, h 1 0 0]; grind
  | k + 1, M, h => by
    show finSum (fun j : Fin (k + 3) =>
      altSign j.val * M 0 j * det (k + 2) (fun i l => M i.succ (skipIdx j l))) = 0
    exact finSum_eq_zero fun j => by
      rw [det_eq_zero_of_identicalRows k _ (identicalRows_minor h j)]; grind

/-- `A² = (Σ_j α_j) A` for `A = 1 αᵀ`: the row sum is the eigenvalue of the singular
generator. -/
theorem rowsOf_mul_self {n : Nat} (a : Fin n → α) :
    (rowsOf a : Mat α n n) ⬝ rowsOf a = (finSum a) • (rowsOf a : Mat α n n) := by
  apply Mat.ext; intro i j
  simp only [Mat.mul_apply, Mat.smul_apply, rowsOf, finSum_mul]

/-- [rank_one_generator] Prop. 3.9, the learned singularity: a generator with identical
rows `A = 1 αᵀ` (`dk ≥ 2`) has every `2 × 2` minor zero (rank at most one) and
`det A = 0`; every entrywise map `f` and every binary entrywise map `g` against an
exponent matrix `P` with identical rows (a Hadamard power `A^{∘P}`) keep its rows
identical. -/
theorem rank_one_generator {dk : Nat} (hdk : 2 ≤ dk) (a : Fin dk → α) :
    (∀ i j k l : Fin dk, (rowsOf a : Mat α dk dk) i j * rowsOf a k l -
        (rowsOf a : Mat α dk dk) i l * rowsOf a k j = 0) ∧
      det dk (rowsOf a : Mat α dk dk) = 0 ∧
      (∀ f : α → α, IdenticalRows (fun i j => f ((rowsOf a : Mat α dk dk) i j))) ∧
      (∀ (g : α → α → α) (P : Mat α dk dk), IdenticalRows P →
        IdenticalRows (fun i j => g ((rowsOf a : Mat α dk dk) i j) (P i j))) := by
  refine ⟨fun i j k l => by simp only [rowsOf]; grind, ?_, by intro f i i' j; rfl,
    by intro g P hP i i' j; simp only [rowsOf]; rw [hP i i' j]⟩
  obtain ⟨k, rfl⟩ : ∃ k, dk = k + 2 := ⟨dk - 2, by omega⟩
  exact det_eq_zero_of_identicalRows k _ (by intro _ _ _; rfl)

end Pldr

end
