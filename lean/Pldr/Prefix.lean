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

end Pldr

end
