module

public import Pldr.SdpaSpecialCase

/-!
# Prefix consistency  (`[prefix_consistency]`)

Paper: causal SDPA is *prefix-consistent*: the output rows of a call on a sequence are
the output rows of the call on any prefix of it (this is what makes KV-cached decoding
exact). PLGA with a **constant** metric `G` inherits this. PLGA with the metric computed
from the global Gram `Qᵀ Q` of the call does not: appending rows changes the Gram, hence
`G`, hence earlier rows.

* `prefix_consistency`: for any constant `G`, truncating the input to its first `m` rows
  gives the first `m` rows of the output (`takeRows`), for every `m`, every scale, every
  abstract exponential. In particular row `r` of the call on `x` equals row `r` of the
  call on `x[:r+1]`.
* `prefix_consistency_sdpa`: the same for causal SDPA.
* `prefix_consistency_fails`: the PLGA head formula `G = Φ(Qᵀ Q)` is not
  prefix-consistent. Concrete counterexample (exact integers) with `dk = 2`, three rows
  truncated to two, `Φ` the identity: the Gram is `diag(1, 2)` for the full call and
  `diag(1, 1)` for the prefix (checked by computation in `prefix_consistency_gram_rat`),
  and row 1 of the output differs for every nonzero scale and every *injective* abstract
  exponential (as the real exponential is). Injectivity is needed: with `exp ≡ 1`
  every softmax is uniform and the counterexample disappears.

Abstracted: `exp` (an `ExpMap`), the metric map `Φ` (the counterexample uses the
identity, an admissible metric map; the paper's trained learner is checked numerically
by the Python property test of this ID). There are no unproved assumptions.
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

/-- The first `m` rows of a matrix with `m + t` rows (the prefix `x[:m]`). -/
@[expose] def takeRows {m t d : Nat} (X : Mat α (m + t) d) : Mat α m d :=
  fun i => X (Fin.castAdd t i)

/-- Inside the prefix, the causal mask is unchanged by truncation. -/
theorem causalMask_castAdd {m t : Nat} (i j : Fin m) :
    causalMask (Fin.castAdd t i) (Fin.castAdd t j) = causalMask i j := by
  simp [causalMask, Fin.le_def]

/-- A prefix row never sees positions beyond the prefix. -/
theorem causalMask_natAdd {m t : Nat} (i : Fin m) (j : Fin t) :
    causalMask (Fin.castAdd t i) (Fin.natAdd m j) = false := by
  simp [causalMask, Fin.le_def]; omega

/-- The causal-softmax normaliser of a prefix row only depends on the prefix of the score
row. -/
theorem causalSoftmax_denominator {m t : Nat} (E : ExpMap α) (i : Fin m)
    (x : Fin (m + t) → α) :
    finSum (fun l => if causalMask (Fin.castAdd t i) l = true then E.exp (x l) else 0) =
      finSum (fun l => if causalMask i l = true then E.exp (x (Fin.castAdd t l)) else 0) := by
  rw [finSum_append]
  have h2 : finSum (fun j : Fin t => if causalMask (Fin.castAdd t i) (Fin.natAdd m j) = true
      then E.exp (x (Fin.natAdd m j)) else 0) = 0 :=
    finSum_eq_zero fun j => by simp [causalMask_natAdd]
  rw [h2]; simp only [causalMask_castAdd]; grind

/-- Causal-softmax weights of a prefix row, on the prefix: those of the truncated row. -/
theorem causalSoftmax_castAdd {m t : Nat} (E : ExpMap α) (i j : Fin m)
    (x : Fin (m + t) → α) :
    causalSoftmax E (Fin.castAdd t i) x (Fin.castAdd t j) =
      causalSoftmax E i (fun l => x (Fin.castAdd t l)) j := by
  simp only [causalSoftmax, msoftmax]
  rw [causalSoftmax_denominator, causalMask_castAdd]

/-- Causal-softmax weights of a prefix row, beyond the prefix: zero. -/
theorem causalSoftmax_natAdd {m t : Nat} (E : ExpMap α) (i : Fin m) (j : Fin t)
    (x : Fin (m + t) → α) :
    causalSoftmax E (Fin.castAdd t i) x (Fin.natAdd m j) = 0 := by
  simp [causalSoftmax, msoftmax, causalMask_natAdd]

/-- [prefix_consistency] Causal attention with a constant metric `G` is prefix-consistent:
the first `m` output rows of a call on `m + t` rows equal the output of the call on the
first `m` rows. (Causal SDPA is the case `G = I`; PLGA with a cached or collapsed `G*`
is the case `G = G*`.) -/
theorem prefix_consistency {m t dk dv : Nat} (E : ExpMap α) (τ : α) (G : Mat α dk dk)
    (Q K : Mat α (m + t) dk) (V : Mat α (m + t) dv) :
    takeRows (attend (causalSoftmax E) τ Q G K V) =
      attend (causalSoftmax E) τ (takeRows Q) G (takeRows K) (takeRows V) := by
  apply Mat.ext; intro i l
  simp only [takeRows, attend, weights, Mat.mul_apply]
  rw [finSum_append]
  have h2 : finSum (fun j : Fin t => causalSoftmax E (Fin.castAdd t i)
      (scores τ Q G K (Fin.castAdd t i)) (Fin.natAdd m j) * V (Fin.natAdd m j) l) = 0 :=
    finSum_eq_zero fun j => by rw [causalSoftmax_natAdd]; grind
  rw [h2]
  simp only [causalSoftmax_castAdd]
  have : ∀ l : Fin m, scores τ Q G K (Fin.castAdd t i) (Fin.castAdd t l) =
      scores τ (takeRows Q) G (takeRows K) i l := fun _ => rfl
  simp only [this]; grind

/-- [prefix_consistency] Causal SDPA is prefix-consistent. -/
theorem prefix_consistency_sdpa {m t dk dv : Nat} (E : ExpMap α) (τ : α)
    (Q K : Mat α (m + t) dk) (V : Mat α (m + t) dv) :
    takeRows (sdpa (causalSoftmax E) τ Q K V) =
      sdpa (causalSoftmax E) τ (takeRows Q) (takeRows K) (takeRows V) := by
  rw [← sdpa_special_case, ← sdpa_special_case, prefix_consistency]

/-! ### The counterexample for a Gram-dependent metric -/

/-- Counterexample queries (3 rows, `dk = 2`): `(1,0), (0,1), (0,1)`. -/
@[expose] def cexQ : Mat α (2 + 1) 2 := fun i j =>
  if i.val = 0 then (if j.val = 0 then 1 else 0) else (if j.val = 0 then 0 else 1)

/-- Counterexample keys: `(0,1), (0,0), (0,0)`. -/
@[expose] def cexK : Mat α (2 + 1) 2 := fun i j =>
  if i.val = 0 then (if j.val = 0 then 0 else 1) else 0

/-- Counterexample values (`dv = 1`): `1, 0, 0`. -/
@[expose] def cexV : Mat α (2 + 1) 1 := fun i _ => if i.val = 0 then 1 else 0

/-- [prefix_consistency] Exact computation over `Rat`: the Gram matrix of the three
counterexample queries is `diag(1, 2)`, that of the first two is `diag(1, 1)`. -/
theorem prefix_consistency_gram_rat :
    (gram (cexQ (α := Rat)) 1 1 = 2 ∧ gram (cexQ (α := Rat)) 0 0 = 1 ∧
      gram (cexQ (α := Rat)) 0 1 = 0 ∧ gram (cexQ (α := Rat)) 1 0 = 0) ∧
    (gram (takeRows (cexQ (α := Rat))) 1 1 = 1 ∧ gram (takeRows (cexQ (α := Rat))) 0 0 = 1 ∧
      gram (takeRows (cexQ (α := Rat))) 0 1 = 0 ∧ gram (takeRows (cexQ (α := Rat))) 1 0 = 0) := by
  simp only [gram, takeRows, cexQ, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  decide +kernel

/-- Row 1 of a causal attention over three positions with values `1, 0, 0`:
the weight of position 0, `exp x₀ / (exp x₀ + exp x₁)`. -/
theorem cex_row_full (E : ExpMap α) (x : Fin (2 + 1) → α) :
    finSum (fun j => causalSoftmax E 1 x j * cexV j 0) =
      E.exp (x 0) / (E.exp (x 0) + E.exp (x 1)) := by
  simp (config := { decide := true }) [causalSoftmax, msoftmax, causalMask, cexV, finSum_succ]
  grind

/-- Row 1 of a causal attention over two positions with values `1, 0`:
the weight of position 0, `exp x₀ / (exp x₀ + exp x₁)`. -/
theorem cex_row_prefix (E : ExpMap α) (x : Fin 2 → α) :
    finSum (fun j => causalSoftmax E 1 x j * cexV (α := α) (Fin.castAdd 1 j) 0) =
      E.exp (x 0) / (E.exp (x 0) + E.exp (x 1)) := by
  simp (config := { decide := true }) [causalSoftmax, msoftmax, causalMask, cexV, finSum_succ]
  grind

/-- The counterexample scores, full call, row 1: `(2τ, 0)` on the visible positions. -/
theorem cex_scores_full (τ : α) :
    scores τ cexQ (gram cexQ) cexK 1 0 = τ * 2 ∧ scores τ cexQ (gram cexQ) cexK 1 1 = 0 := by
  simp only [scores, gram, Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  simp (config := { decide := true }) [cexQ, cexK]
  grind

/-- The counterexample scores, prefix call, row 1: `(τ, 0)`. -/
theorem cex_scores_prefix (τ : α) :
    scores τ (takeRows cexQ) (gram (takeRows cexQ)) (takeRows cexK) 1 0 = τ ∧
      scores τ (takeRows cexQ) (gram (takeRows cexQ)) (takeRows cexK) 1 1 = 0 := by
  simp only [scores, gram, takeRows, Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply,
    finSum_succ, finSum_zero_len]
  simp (config := { decide := true }) [cexQ, cexK]
  grind

/-- [prefix_consistency] PLGA with a Gram-dependent metric is **not** prefix-consistent.
For the head `G = Φ(Qᵀ Q)` with `Φ` the identity, the counterexample inputs `cexQ`,
`cexK`, `cexV` (three rows, `dk = 2`) and any nonzero scale `τ`, row 1 of the call on
all three rows differs from row 1 of the call on the first two, for every abstract
exponential that is injective (as the real exponential is). -/
theorem prefix_consistency_fails (E : ExpMap α) (hinj : ∀ a b, E.exp a = E.exp b → a = b)
    (τ : α) (hτ : τ ≠ 0) :
    takeRows (plgaHeadWith (causalSoftmax E) τ (fun D => D) cexQ cexK cexV) ≠
      plgaHeadWith (causalSoftmax E) τ (fun D => D) (takeRows cexQ) (takeRows cexK)
        (takeRows cexV) := by
  intro h
  have h1 := congrFun (congrFun h 1) 0
  simp only [takeRows, plgaHeadWith, attend, weights, Mat.mul_apply] at h1
  have hf := cex_row_full E (scores τ cexQ (gram cexQ) cexK 1)
  have hp := cex_row_prefix E (scores τ (takeRows cexQ) (gram (takeRows cexQ)) (takeRows cexK) 1)
  have e1 : Fin.castAdd 1 (1 : Fin 2) = (1 : Fin (2 + 1)) := rfl
  rw [e1, hf, hp] at h1
  obtain ⟨f0, f1⟩ := cex_scores_full τ
  obtain ⟨p0, p1⟩ := cex_scores_prefix τ
  rw [f0, f1, p0, p1] at h1
  have key := eq_of_div_add_eq_div_add (E.exp_pos (τ * 2)) (E.exp_pos τ) (E.exp_pos 0) h1
  have := hinj _ _ key
  grind

/-- [prefix_consistency] The counterexample is about the actual head formula: with the
metric map `Φ = id`, the PLGA metric of the full call and of the prefix call differ
(`G = diag(1,2)` versus `diag(1,1)`), while any constant `G` gives prefix consistency. -/
theorem prefix_consistency_metric_differs :
    gram (cexQ (α := Rat)) ≠ gram (takeRows (cexQ (α := Rat))) := by
  intro h
  have := congrFun (congrFun h 1) 1
  rw [prefix_consistency_gram_rat.1.1, prefix_consistency_gram_rat.2.1] at this
  exact absurd this (by decide +kernel)

end Pldr

end
