module

public import Pldr.ScorePerturbation

/-!
# Softmax with separate score and weight carriers; the base-2 model

Over one ordered field `α` the only abstract exponential of core Lean's `Rat` is the
constant `1` (`exp x = exp(x/n)ⁿ` for every `n` forces it: `ExpMap.eq_one_of_rat`,
`ExpMap.not_injective_rat` in `Pldr.ExpRat`), so the theorems that need an injective or
monotone `exp` had no satisfiable instance in the library. Softmax only needs `exp` to
map the *additive group of scores* into the *positive elements of a field of weights*,
and these need not be the same type. This file separates them.

* `ExpHom R F`: `exp : R → F` from a commutative ring of scores to an ordered field of
  weights, `exp (a + b) = exp a * exp b`, `exp a > 0`. `ExpMap.toExpHom` is the case
  `R = F`, and every single-carrier definition is the two-carrier one there
  (`msoftmax_eq_hsoftmax`, `plgaHeadWith_eq_hplgaHeadWith`, by `rfl`); the single-carrier
  theorems follow (`softmax_shift_of_hom`, `softmax_simplex_eq_iff_of_hom`).
* `[softmax_shift]` `softmax_shift_hom`; `[softmax_simplex]` `softmax_simplex_hom`,
  `softmax_simplex_eq_iff_hom`; `[score_perturbation]` `score_perturbation_softmax_hom`
  (for a monotone `exp`); `[prefix_consistency]` `prefix_consistency_fails_of_metric_hom`
  (the Gram-metric head `G = Φ(Qᵀ Q)` for any `Φ` that separates the two calls' scaled
  entry `(1,1)`, for an injective `exp`) and its case `Φ = id`,
  `prefix_consistency_fails_hom`.
* The genuine model `pow2 : ExpHom Int Rat`, `n ↦ 2ⁿ` (softmax with base 2): injective
  and strictly monotone (`pow2_injective`, `pow2_mono`), and every theorem above that
  assumes injectivity or monotonicity instantiated on it with kernel-checked rational
  values (`softmax_simplex_pow2`: two rows that differ; `score_perturbation_pow2`: a
  weight kept within its factor and the argmax kept; `prefix_consistency_fails_pow2`:
  row 1 is `4/5` on the full call and `2/3` on the prefix;
  `prefix_consistency_fails_of_metric_pow2`: the power-law metric `(Qᵀ Q)^{∘2}`, row 1
  `16/17` against `2/3`).

There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u v

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

/-- An exponential from a commutative ring of scores `R` into the positive elements of an
ordered field of weights `F`: a homomorphism from `(R, +)` to `(F_{>0}, *)`. With
`R = F = ℝ` it is `Real.exp`; `n ↦ 2ⁿ : Int → Rat` is a genuine model (`pow2`). -/
structure ExpHom (R : Type u) (F : Type v) [CommRing R] [Field F] [LT F] where
  /-- The exponential function. -/
  exp : R → F
  /-- `exp (a + b) = exp a * exp b`. -/
  exp_add : ∀ a b, exp (a + b) = exp a * exp b
  /-- `exp a > 0`. -/
  exp_pos : ∀ a, 0 < exp a

/-- A monotone two-carrier exponential (scores ordered too). -/
structure MonoExpHom (R : Type u) (F : Type v) [CommRing R] [LE R] [Field F] [LE F] [LT F]
    extends ExpHom R F where
  /-- `a ≤ b → exp a ≤ exp b`. -/
  exp_mono : ∀ a b, a ≤ b → exp a ≤ exp b

section Generic

variable {R : Type u} [CommRing R]
variable {F : Type v} [Field F] [LE F] [LT F] [Std.LawfulOrderLT F] [Std.IsLinearOrder F]
  [OrderedRing F]

/-- A single-carrier abstract exponential is a two-carrier one with `R = F`. -/
@[expose] def ExpMap.toExpHom (E : ExpMap F) : ExpHom F F := ⟨E.exp, E.exp_add, E.exp_pos⟩

/-- The exponential never vanishes. -/
theorem ExpHom.exp_ne_zero (E : ExpHom R F) (a : R) : E.exp a ≠ 0 := by
  have := E.exp_pos a; grind

/-- `exp 0 = 1`. -/
theorem ExpHom.exp_zero (E : ExpHom R F) : E.exp 0 = 1 := by
  have h := E.exp_add 0 0
  have hz : (0 : R) + 0 = 0 := by grind
  rw [hz] at h
  have := E.exp_ne_zero 0
  have h2 : E.exp 0 * (E.exp 0 - 1) = 0 := by grind
  grind

/-- Masked softmax of a score row `x : Fin n → R`, with weights in `F`. -/
@[expose] def hsoftmax {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R) :
    Fin n → F :=
  fun j => if mask j = true then
      E.exp (x j) / finSum (fun l => if mask l = true then E.exp (x l) else 0)
    else 0

/-- The softmax denominator `Σ_{allowed l} exp x_l`. -/
@[expose] def hsmDenom {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R) : F :=
  finSum fun l => if mask l = true then E.exp (x l) else 0

/-- The single-carrier masked softmax is the two-carrier one with `R = F`. -/
theorem msoftmax_eq_hsoftmax {n : Nat} (E : ExpMap F) (mask : Fin n → Bool) (x : Fin n → F) :
    msoftmax E mask x = hsoftmax E.toExpHom mask x := rfl

/-- [softmax_shift] Two carriers: masked softmax is invariant under adding one score
`c : R` to every entry of the row. -/
theorem softmax_shift_hom {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R)
    (c : R) : hsoftmax E mask (fun j => x j + c) = hsoftmax E mask x := by
  funext j
  simp only [hsoftmax]
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

/-- [softmax_shift] The single-carrier statement as the case `R = F`. -/
theorem softmax_shift_of_hom {n : Nat} (E : ExpMap F) (mask : Fin n → Bool) (x : Fin n → F)
    (c : F) : msoftmax E mask (fun j => x j + c) = msoftmax E mask x :=
  softmax_shift_hom E.toExpHom mask x c

/-- The denominator is at least every allowed term. -/
theorem hsmDenom_ge {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R)
    (j : Fin n) (hj : mask j = true) : E.exp (x j) ≤ hsmDenom E mask x := by
  calc E.exp (x j) = (if mask j = true then E.exp (x j) else 0) := (if_pos hj).symm
    _ ≤ hsmDenom E mask x :=
      le_finSum_of_nonneg (f := fun l => if mask l = true then E.exp (x l) else 0)
        (fun l => by
          have := E.exp_pos (x l)
          show 0 ≤ (if mask l = true then E.exp (x l) else 0)
          split <;> grind) j

/-- The denominator is positive when some entry is allowed. -/
theorem hsmDenom_pos {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R)
    (j : Fin n) (hj : mask j = true) : 0 < hsmDenom E mask x := by
  have := hsmDenom_ge E mask x j hj; have := E.exp_pos (x j); grind

/-- Masked softmax reads the scores only on allowed entries. -/
theorem hsoftmax_congr {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) {x y : Fin n → R}
    (h : ∀ j, mask j = true → x j = y j) : hsoftmax E mask x = hsoftmax E mask y := by
  have hd : (fun l => if mask l = true then E.exp (x l) else 0) =
      fun l => if mask l = true then E.exp (y l) else 0 :=
    funext fun l => by by_cases hl : mask l = true <;> simp [hl, h]
  funext j
  simp only [hsoftmax]
  rw [hd]
  by_cases hj : mask j = true <;> simp [hj, h]

/-- [softmax_simplex] Two carriers: a masked softmax row is positive on allowed entries,
zero on masked ones, and sums to `1` as soon as one entry is allowed. -/
theorem softmax_simplex_hom {n : Nat} (E : ExpHom R F) (mask : Fin n → Bool) (x : Fin n → R) :
    (∀ j, mask j = true → 0 < hsoftmax E mask x j) ∧
      (∀ j, mask j = false → hsoftmax E mask x j = 0) ∧
      ((∃ j, mask j = true) → finSum (hsoftmax E mask x) = 1) := by
  refine ⟨fun j hj => ?_, fun j hj => by simp [hsoftmax, hj], fun ⟨j0, hj0⟩ => ?_⟩
  · have hZ := hsmDenom_pos E mask x j hj
    have he := E.exp_pos (x j)
    have hi := inv_pos_of_pos hZ
    simp only [hsoftmax]
    rw [if_pos hj, Field.div_eq_mul_inv]
    exact OrderedRing.mul_pos he hi
  · have hZ := hsmDenom_pos E mask x j0 hj0
    have hne : hsmDenom E mask x ≠ 0 := by grind
    have h : hsoftmax E mask x = fun j =>
        (if mask j = true then E.exp (x j) else 0) * (hsmDenom E mask x)⁻¹ := by
      funext j; simp only [hsoftmax, hsmDenom, Field.div_eq_mul_inv]; split <;> grind
    rw [h, ← finSum_mul]
    show hsmDenom E mask x * (hsmDenom E mask x)⁻¹ = 1
    exact Field.mul_inv_cancel hne

/-- [softmax_simplex] Two carriers, for an injective exponential: two score rows give the
same masked softmax row iff they differ by one constant score on the allowed entries. -/
theorem softmax_simplex_eq_iff_hom {n : Nat} (E : ExpHom R F)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (mask : Fin n → Bool) (x y : Fin n → R) :
    hsoftmax E mask x = hsoftmax E mask y ↔
      ∃ c, ∀ j, mask j = true → x j = y j + c := by
  constructor
  · intro h
    by_cases hne : ∃ j0, mask j0 = true
    · obtain ⟨j0, hj0⟩ := hne
      refine ⟨x j0 - y j0, fun j hj => ?_⟩
      have hZx := hsmDenom_pos E mask x j0 hj0
      have hZy := hsmDenom_pos E mask y j0 hj0
      have h1 := congrFun h j
      have h2 := congrFun h j0
      simp only [hsoftmax] at h1 h2
      rw [if_pos hj, if_pos hj] at h1
      rw [if_pos hj0, if_pos hj0] at h2
      change E.exp (x j) / hsmDenom E mask x = E.exp (y j) / hsmDenom E mask y at h1
      change E.exp (x j0) / hsmDenom E mask x = E.exp (y j0) / hsmDenom E mask y at h2
      have k1 : E.exp (x j) * hsmDenom E mask y = E.exp (y j) * hsmDenom E mask x := by
        grind
      have k2 : E.exp (x j0) * hsmDenom E mask y = E.exp (y j0) * hsmDenom E mask x := by
        grind
      have k3 : E.exp (x j) * E.exp (y j0) = E.exp (y j) * E.exp (x j0) := by
        have : (E.exp (x j) * E.exp (y j0) - E.exp (y j) * E.exp (x j0)) *
            hsmDenom E mask y = 0 := by grind
        grind
      rw [← E.exp_add, ← E.exp_add] at k3
      have := hinj _ _ k3
      grind
    · refine ⟨0, fun j hj => absurd ⟨j, hj⟩ hne⟩
  · rintro ⟨c, hc⟩
    rw [hsoftmax_congr E mask hc]
    exact softmax_shift_hom E mask y c

/-- [softmax_simplex] The single-carrier `softmax_simplex_eq_iff` as the case `R = F`. -/
theorem softmax_simplex_eq_iff_of_hom {n : Nat} (E : ExpMap F)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (mask : Fin n → Bool) (x y : Fin n → F) :
    msoftmax E mask x = msoftmax E mask y ↔ ∃ c, ∀ j, mask j = true → x j = y j + c :=
  softmax_simplex_eq_iff_hom E.toExpHom hinj mask x y

/-! ### Attention and the prefix counterexample with two carriers -/

/-- The first `m` rows of a matrix with `m + t` rows, for any entry type. -/
@[expose] def takeRowsH {β : Type v} {m t d : Nat} (X : Fin (m + t) → Fin d → β) :
    Fin m → Fin d → β :=
  fun i => X (Fin.castAdd t i)

/-- Causal attention with scores `τ Q G Kᵀ` in `R` and values and output in `F`. -/
@[expose] def hcausalAttend {S dk dv : Nat} (E : ExpHom R F) (τ : R) (Q : Mat R S dk)
    (G : Mat R dk dk) (K : Mat R S dk) (V : Mat F S dv) : Mat F S dv :=
  fun i l => finSum fun j => hsoftmax E (causalMask i) ((τ • (Q ⬝ G ⬝ Kᵀ)) i) j * V j l

/-- The PLGA head `G = Φ(Qᵀ Q)` with two carriers. -/
@[expose] def hplgaHeadWith {S dk dv : Nat} (E : ExpHom R F) (τ : R)
    (Φ : Mat R dk dk → Mat R dk dk) (Q K : Mat R S dk) (V : Mat F S dv) : Mat F S dv :=
  hcausalAttend E τ Q (Φ (Qᵀ ⬝ Q)) K V

/-- The single-carrier head is the two-carrier one with `R = F`. -/
theorem plgaHeadWith_eq_hplgaHeadWith {S dk dv : Nat} (E : ExpMap F) (τ : F)
    (Φ : Mat F dk dk → Mat F dk dk) (Q K : Mat F S dk) (V : Mat F S dv) :
    plgaHeadWith (causalSoftmax E) τ Φ Q K V = hplgaHeadWith E.toExpHom τ Φ Q K V := rfl

/-- Counterexample queries over `R` (as `cexQ`): `(1,0), (0,1), (0,1)`. -/
@[expose] def hcexQ : Mat R (2 + 1) 2 := fun i j =>
  if i.val = 0 then (if j.val = 0 then 1 else 0) else (if j.val = 0 then 0 else 1)

/-- Counterexample keys over `R` (as `cexK`): `(0,1), (0,0), (0,0)`. -/
@[expose] def hcexK : Mat R (2 + 1) 2 := fun i j =>
  if i.val = 0 then (if j.val = 0 then 0 else 1) else 0

/-- Counterexample values over `F` (as `cexV`): `1, 0, 0`. -/
@[expose] def hcexV : Mat F (2 + 1) 1 := fun i _ => if i.val = 0 then 1 else 0

/-- Row 1 of a causal call over three positions with values `1, 0, 0`: the weight of
position 0, `exp x₀ / (exp x₀ + exp x₁)`. -/
theorem hcex_row_full (E : ExpHom R F) (x : Fin (2 + 1) → R) :
    finSum (fun j => hsoftmax E (causalMask 1) x j * hcexV j 0) =
      E.exp (x 0) / (E.exp (x 0) + E.exp (x 1)) := by
  simp (config := { decide := true }) [hsoftmax, causalMask, hcexV, finSum_succ]
  grind

/-- Row 1 of a causal call over two positions with values `1, 0`: the same weight. -/
theorem hcex_row_prefix (E : ExpHom R F) (x : Fin 2 → R) :
    finSum (fun j => hsoftmax E (causalMask 1) x j * hcexV (F := F) (Fin.castAdd 1 j) 0) =
      E.exp (x 0) / (E.exp (x 0) + E.exp (x 1)) := by
  simp (config := { decide := true }) [hsoftmax, causalMask, hcexV, finSum_succ]
  grind

/-- The counterexample scores of row 1 for any metric `G` (full call): `(τ G₁₁, 0)`. -/
theorem hcex_scores_full (τ : R) (G : Mat R 2 2) :
    (τ • (hcexQ ⬝ G ⬝ hcexKᵀ)) 1 0 = τ * G 1 1 ∧ (τ • (hcexQ ⬝ G ⬝ hcexKᵀ)) 1 1 = 0 := by
  simp only [Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  simp (config := { decide := true }) [hcexQ, hcexK]
  grind

/-- The counterexample scores of row 1 for any metric `G` (prefix call). -/
theorem hcex_scores_prefix (τ : R) (G : Mat R 2 2) :
    (τ • (takeRowsH hcexQ ⬝ G ⬝ (takeRowsH hcexK)ᵀ)) 1 0 = τ * G 1 1 ∧
      (τ • (takeRowsH hcexQ ⬝ G ⬝ (takeRowsH hcexK)ᵀ)) 1 1 = 0 := by
  simp only [takeRowsH, Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  simp (config := { decide := true }) [hcexQ, hcexK]
  grind

/-- Row 1 of the full call with any metric `G`: `exp(τ G₁₁) / (exp(τ G₁₁) + exp 0)`. -/
theorem hcex_full (E : ExpHom R F) (τ : R) (G : Mat R 2 2) :
    hcausalAttend E τ hcexQ G hcexK hcexV 1 0 =
      E.exp (τ * G 1 1) / (E.exp (τ * G 1 1) + E.exp 0) := by
  show finSum (fun j => hsoftmax E (causalMask 1) ((τ • (hcexQ ⬝ G ⬝ hcexKᵀ)) 1) j *
    hcexV j 0) = _
  rw [hcex_row_full, (hcex_scores_full τ G).1, (hcex_scores_full τ G).2]

/-- Row 1 of the prefix call (first two rows) with any metric `G`: the same formula. -/
theorem hcex_prefix (E : ExpHom R F) (τ : R) (G : Mat R 2 2) :
    hcausalAttend E τ (takeRowsH hcexQ) G (takeRowsH hcexK) (takeRowsH hcexV) 1 0 =
      E.exp (τ * G 1 1) / (E.exp (τ * G 1 1) + E.exp 0) := by
  show finSum (fun j => hsoftmax E (causalMask 1)
    ((τ • (takeRowsH hcexQ ⬝ G ⬝ (takeRowsH hcexK)ᵀ)) 1) j *
      hcexV (F := F) (Fin.castAdd 1 j) 0) = _
  rw [hcex_row_prefix, (hcex_scores_prefix τ G).1, (hcex_scores_prefix τ G).2]

/-- The Gram entry `D₁₁`: `2` on the full call, `1` on the prefix. -/
theorem hcex_gram :
    ((hcexQ (R := R))ᵀ ⬝ hcexQ) 1 1 = 2 ∧
      ((takeRowsH (hcexQ (R := R)))ᵀ ⬝ takeRowsH hcexQ) 1 1 = 1 := by
  simp only [takeRowsH, Mat.mul_apply, Mat.transpose_apply, finSum_succ, finSum_zero_len]
  simp (config := { decide := true }) [hcexQ]
  grind

/-- [prefix_consistency] Two carriers, any metric map `Φ` (Prop. 4.4's failure for the
Gram-generated metric): if the scaled metric entries `τ · Φ(Qᵀ Q)₁₁` of the call on the
three counterexample rows and of the call on its first two differ, then for every
injective exponential `exp : R → F` row 1 of the two calls differs.
`prefix_consistency_fails_of_metric` is the case `R = F` (over `ℝ`). -/
theorem prefix_consistency_fails_of_metric_hom (E : ExpHom R F)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (τ : R) (Φ : Mat R 2 2 → Mat R 2 2)
    (hΦ : τ * Φ (hcexQᵀ ⬝ hcexQ) 1 1 ≠ τ * Φ ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ) 1 1) :
    takeRowsH (hplgaHeadWith E τ Φ hcexQ hcexK hcexV) ≠
      hplgaHeadWith E τ Φ (takeRowsH hcexQ) (takeRowsH hcexK) (takeRowsH hcexV) := by
  intro h
  have h1 := congrFun (congrFun h 1) 0
  change hcausalAttend E τ hcexQ (Φ (hcexQᵀ ⬝ hcexQ)) hcexK hcexV 1 0 =
    hcausalAttend E τ (takeRowsH hcexQ) (Φ ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ))
      (takeRowsH hcexK) (takeRowsH hcexV) 1 0 at h1
  rw [hcex_full, hcex_prefix] at h1
  generalize τ * Φ (hcexQᵀ ⬝ hcexQ) 1 1 = x at h1 hΦ
  generalize τ * Φ ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ) 1 1 = y at h1 hΦ
  exact hΦ (hinj _ _ (eq_of_div_add_eq_div_add (E.exp_pos x) (E.exp_pos y) (E.exp_pos 0) h1))

/-- [prefix_consistency] Two carriers: the head `G = Qᵀ Q` (`Φ = id`) is not
prefix-consistent. On the counterexample inputs, for every injective exponential
`exp : R → F` and every scale `τ ≠ 0`, row 1 of the call on three rows differs from row 1
of the call on the first two. -/
theorem prefix_consistency_fails_hom (E : ExpHom R F)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (τ : R) (hτ : τ ≠ 0) :
    takeRowsH (hplgaHeadWith E τ (fun D => D) hcexQ hcexK hcexV) ≠
      hplgaHeadWith E τ (fun D => D) (takeRowsH hcexQ) (takeRowsH hcexK)
        (takeRowsH hcexV) := by
  refine prefix_consistency_fails_of_metric_hom E hinj τ (fun D => D) ?_
  show τ * (hcexQᵀ ⬝ hcexQ) 1 1 ≠ τ * ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ) 1 1
  rw [hcex_gram.1, hcex_gram.2]
  grind

end Generic

/-! ### Monotone exponentials: the perturbation bound with two carriers -/

section Mono

variable {R : Type u} [CommRing R] [LE R] [LT R] [Std.LawfulOrderLT R] [Std.IsLinearOrder R]
  [OrderedRing R]
variable {F : Type v} [Field F] [LE F] [LT F] [Std.LawfulOrderLT F] [Std.IsLinearOrder F]
  [OrderedRing F]

/-- The upper half of the factor bound, two carriers. -/
theorem hsoftmax_factor_upper {n : Nat} (E : MonoExpHom R F) (mask : Fin n → Bool)
    (x x' : Fin n → R) (η : R) (hη : ∀ j, mask j = true → -η ≤ x' j - x j ∧ x' j - x j ≤ η)
    (j : Fin n) (hj : mask j = true) :
    hsoftmax E.toExpHom mask x' j ≤ E.exp (η + η) * hsoftmax E.toExpHom mask x j := by
  have hexp := E.exp_pos
  have hZp := hsmDenom_pos E.toExpHom mask x j hj
  have hZp' := hsmDenom_pos E.toExpHom mask x' j hj
  have hnum : E.exp (x' j) ≤ E.exp (x j) * E.exp η := by
    rw [← E.exp_add]
    exact E.exp_mono (x' j) (x j + η) (by have := hη j hj; grind)
  have hden : hsmDenom E.toExpHom mask x * E.exp (-η) ≤ hsmDenom E.toExpHom mask x' := by
    show (finSum fun l => if mask l = true then E.exp (x l) else 0) * E.exp (-η) ≤
      finSum fun l => if mask l = true then E.exp (x' l) else 0
    rw [finSum_mul]
    refine finSum_le_finSum fun l => ?_
    by_cases hl : mask l = true
    · rw [if_pos hl, if_pos hl, ← E.exp_add]
      exact E.exp_mono (x l + -η) (x' l) (by have := hη l hl; grind)
    · rw [if_neg hl, if_neg hl]; grind
  have he2 : E.exp (η + η) = E.exp η * E.exp η := E.exp_add η η
  have hpη := hexp η
  have hpx := hexp (x j)
  generalize hZ : hsmDenom E.toExpHom mask x = Z at hZp hden
  generalize hZ' : hsmDenom E.toExpHom mask x' = Z' at hZp' hden
  have he1 : E.exp (-η) * E.exp η = 1 := by
    rw [← E.exp_add]; have : -η + η = 0 := by grind
    rw [this]; exact ExpHom.exp_zero E.toExpHom
  have key : E.exp (x' j) * Z ≤ E.exp (η + η) * E.exp (x j) * Z' := by
    have a1 : E.exp (x' j) * Z ≤ E.exp (x j) * E.exp η * Z :=
      OrderedRing.mul_le_mul_of_nonneg_right hnum (Std.le_of_lt hZp)
    have hc : 0 ≤ E.exp (x j) * E.exp η * E.exp η :=
      Std.le_of_lt (OrderedRing.mul_pos (OrderedRing.mul_pos hpx hpη) hpη)
    have a2 : E.exp (x j) * E.exp η * E.exp η * (Z * E.exp (-η)) ≤
        E.exp (x j) * E.exp η * E.exp η * Z' :=
      OrderedRing.mul_le_mul_of_nonneg_left hden hc
    have a3 : E.exp (x j) * E.exp η * Z =
        E.exp (x j) * E.exp η * E.exp η * (Z * E.exp (-η)) := by grind
    rw [he2]; grind
  have hZne : Z ≠ 0 := by grind
  have hZne' : Z' ≠ 0 := by grind
  have hinv : 0 ≤ Z⁻¹ * Z'⁻¹ := Std.le_of_lt
    (OrderedRing.mul_pos (inv_pos_of_pos hZp) (inv_pos_of_pos hZp'))
  have k2 := OrderedRing.mul_le_mul_of_nonneg_right key hinv
  have i1 := Field.mul_inv_cancel hZne
  have i2 := Field.mul_inv_cancel hZne'
  have l1 : E.exp (x' j) * Z * (Z⁻¹ * Z'⁻¹) = E.exp (x' j) * Z'⁻¹ := by grind
  have l2 : E.exp (η + η) * E.exp (x j) * Z' * (Z⁻¹ * Z'⁻¹) =
      E.exp (η + η) * (E.exp (x j) * Z⁻¹) := by grind
  rw [l1, l2] at k2
  simp only [hsoftmax]
  rw [if_pos hj, if_pos hj, Field.div_eq_mul_inv, Field.div_eq_mul_inv]
  change E.exp (x' j) * (hsmDenom E.toExpHom mask x')⁻¹ ≤
    E.exp (η + η) * (E.exp (x j) * (hsmDenom E.toExpHom mask x)⁻¹)
  rw [hZ, hZ']
  exact k2

/-- [score_perturbation] Two carriers, for a monotone exponential: if every allowed score
moves by at most `η`, each masked softmax weight changes by a factor within
`[exp(-2η), exp(2η)]`. -/
theorem score_perturbation_softmax_hom {n : Nat} (E : MonoExpHom R F) (mask : Fin n → Bool)
    (x x' : Fin n → R) (η : R) (hη : ∀ j, mask j = true → -η ≤ x' j - x j ∧ x' j - x j ≤ η)
    (j : Fin n) (hj : mask j = true) :
    hsoftmax E.toExpHom mask x' j ≤ E.exp (η + η) * hsoftmax E.toExpHom mask x j ∧
      E.exp (-(η + η)) * hsoftmax E.toExpHom mask x j ≤ hsoftmax E.toExpHom mask x' j := by
  refine ⟨hsoftmax_factor_upper E mask x x' η hη j hj, ?_⟩
  have hη' : ∀ j, mask j = true → -η ≤ x j - x' j ∧ x j - x' j ≤ η := fun j hj => by
    have := hη j hj; exact ⟨by grind, by grind⟩
  have h := hsoftmax_factor_upper E mask x' x η hη' j hj
  have he : E.exp (-(η + η)) * E.exp (η + η) = 1 := by
    rw [← E.exp_add]; have : -(η + η) + (η + η) = 0 := by grind
    rw [this]; exact ExpHom.exp_zero E.toExpHom
  have hp := E.exp_pos (-(η + η))
  have k := OrderedRing.mul_le_mul_of_nonneg_left h (Std.le_of_lt hp)
  have r : E.exp (-(η + η)) * (E.exp (η + η) * hsoftmax E.toExpHom mask x' j) =
      hsoftmax E.toExpHom mask x' j := by grind
  rw [r] at k
  exact k

end Mono

/-! ### The genuine model: softmax with base 2, `Int → Rat` -/

/-- `1 ≤ 2ᵏ` in `Rat`. -/
theorem one_le_two_pow (k : Nat) : (1 : Rat) ≤ 2 ^ k := by
  induction k with
  | zero => rw [Semiring.pow_zero]; exact Std.le_refl _
  | succ k ih => rw [Semiring.pow_succ]; grind

/-- `2 ≤ 2ᵏ⁺¹` in `Rat`. -/
theorem two_le_two_pow_succ (k : Nat) : (2 : Rat) ≤ 2 ^ (k + 1) := by
  rw [Semiring.pow_succ]; have := one_le_two_pow k; grind

/-- `2ⁿ > 0` for every integer `n`. -/
theorem two_zpow_pos (n : Int) : 0 < (2 : Rat) ^ n := by
  obtain ⟨k, h | h⟩ := Int.eq_nat_or_neg n <;> subst h
  · rw [Field.zpow_natCast]; have := one_le_two_pow k; grind
  · rw [Field.zpow_neg, Field.zpow_natCast]
    have h1 := one_le_two_pow k
    exact inv_pos_of_pos (by grind)

/-- `2ᵃ⁺ᵇ = 2ᵃ 2ᵇ` for integers. -/
theorem two_zpow_add (a b : Int) : (2 : Rat) ^ (a + b) = 2 ^ a * 2 ^ b :=
  Field.zpow_add (by decide) a b

/-- `n ↦ 2ⁿ` is strictly increasing on `Int`. -/
theorem two_zpow_lt {a b : Int} (h : a < b) : (2 : Rat) ^ a < 2 ^ b := by
  have e : b = a + ((b - a - 1).toNat + 1 : Nat) := by omega
  rw [e, two_zpow_add, Field.zpow_natCast]
  have h1 := two_le_two_pow_succ (b - a - 1).toNat
  have h2 := two_zpow_pos a
  have h3 := OrderedRing.mul_le_mul_of_nonneg_left h1 (Std.le_of_lt h2)
  grind

/-- The genuine model: softmax with base 2, `exp n = 2ⁿ` from integer scores to rational
weights (monotone, hence also an `ExpHom` by `toExpHom`). -/
@[expose] def pow2 : MonoExpHom Int Rat where
  exp := fun n => (2 : Rat) ^ n
  exp_add := two_zpow_add
  exp_pos := two_zpow_pos
  exp_mono := fun a b h => by
    show (2 : Rat) ^ a ≤ (2 : Rat) ^ b
    by_cases hab : a = b
    · subst hab; exact Std.le_refl ((2 : Rat) ^ a)
    · exact Std.le_of_lt (two_zpow_lt (by omega))

/-- `pow2` is monotone: `a ≤ b → 2ᵃ ≤ 2ᵇ`. -/
theorem pow2_mono (a b : Int) (h : a ≤ b) : pow2.exp a ≤ pow2.exp b := pow2.exp_mono a b h

/-- `pow2` is injective (strictly monotone). -/
theorem pow2_injective : ∀ a b : Int, pow2.exp a = pow2.exp b → a = b := by
  intro a b h
  apply Classical.byContradiction; intro hne
  rcases Int.lt_or_gt_of_ne hne with hlt | hlt
  · have := two_zpow_lt hlt; change (2 : Rat) ^ a = 2 ^ b at h; grind
  · have := two_zpow_lt hlt; change (2 : Rat) ^ a = 2 ^ b at h; grind

/-- [softmax_simplex] On the genuine model: the rows `(0, 1)` and `(0, 2)` give different
softmax rows (`(1/3, 2/3)` and `(1/5, 4/5)`, kernel-checked), and `(0, 1)` and `(5, 6)` the
same, as `softmax_simplex_eq_iff_hom` says (they differ by the constant `5`). -/
theorem softmax_simplex_pow2 :
    hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 1) 1 =
        2 / 3 ∧
      hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 2) 1 =
        4 / 5 ∧
      hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 1) ≠
        hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 2) ∧
      hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 1) =
        hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 5 else 6) := by
  refine ⟨?_, ?_, ?_, ?_⟩
  · simp only [hsoftmax, pow2, finSum_succ, finSum_zero_len]; decide +kernel
  · simp only [hsoftmax, pow2, finSum_succ, finSum_zero_len]; decide +kernel
  · intro h
    have := (softmax_simplex_eq_iff_hom pow2.toExpHom pow2_injective _ _ _).mp h
    obtain ⟨c, hc⟩ := this
    have h0 := hc 0 rfl
    have h1 := hc 1 rfl
    simp at h0 h1
    omega
  · exact (softmax_simplex_eq_iff_hom pow2.toExpHom pow2_injective _ _ _).mpr
      ⟨-5, fun j _ => by
        by_cases hj : j.val = 0 <;> simp [hj]⟩

/-- [score_perturbation] On the genuine model: moving the scores `(0, 3)` to `(1, 2)`
(`η = 1`) takes weight 1 from `8/9` to `2/3`, within the factor `[2⁻², 2²]` the theorem
gives, and the argmax (position 1) is kept, as the `2η < margin = 3` criterion of
`score_perturbation_argmax` says. -/
theorem score_perturbation_pow2 :
    hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 3) 1 =
        8 / 9 ∧
      hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 1 else 2) 1 =
        2 / 3 ∧
      (hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 1 else 2) 1 ≤
          pow2.exp (1 + 1) *
            hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 3) 1 ∧
        pow2.exp (-(1 + 1)) *
            hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 0 else 3) 1 ≤
          hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 1 else 2) 1) ∧
      hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 1 else 2) 0 <
        hsoftmax pow2.toExpHom (fun _ => true) (fun j : Fin 2 => if j.val = 0 then 1 else 2) 1 := by
  refine ⟨?_, ?_, score_perturbation_softmax_hom pow2 _ _ _ 1 (fun j _ => ?_) 1 rfl, ?_⟩
  · simp only [hsoftmax, pow2, finSum_succ, finSum_zero_len]; decide +kernel
  · simp only [hsoftmax, pow2, finSum_succ, finSum_zero_len]; decide +kernel
  · by_cases hj : j.val = 0 <;> simp [hj]
  · simp only [hsoftmax, pow2, finSum_succ, finSum_zero_len]; decide +kernel

/-- [prefix_consistency] On the genuine model (`τ = 1`): the head `G = Qᵀ Q` is not
prefix-consistent, and row 1 is `4/5` on the full call and `2/3` on the prefix
(kernel-checked). -/
theorem prefix_consistency_fails_pow2 :
    takeRowsH (hplgaHeadWith pow2.toExpHom 1 (fun D => D) hcexQ hcexK (hcexV (F := Rat))) ≠
        hplgaHeadWith pow2.toExpHom 1 (fun D => D) (takeRowsH hcexQ) (takeRowsH hcexK)
          (takeRowsH hcexV) ∧
      hcausalAttend pow2.toExpHom 1 hcexQ (hcexQᵀ ⬝ hcexQ) hcexK (hcexV (F := Rat)) 1 0 =
        4 / 5 ∧
      hcausalAttend pow2.toExpHom 1 (takeRowsH hcexQ) ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ)
          (takeRowsH hcexK) (takeRowsH (hcexV (F := Rat))) 1 0 = 2 / 3 := by
  refine ⟨prefix_consistency_fails_hom pow2.toExpHom pow2_injective 1 (by decide), ?_, ?_⟩
  · rw [hcex_full, hcex_gram.1]; simp only [pow2]; decide +kernel
  · rw [hcex_prefix, hcex_gram.2]; simp only [pow2]; decide +kernel

/-- The entrywise square `D ↦ D ∘ D`: the paper's power law `A^{∘P}` at `P = 2`, over the
integer scores of the genuine model. -/
@[expose] def hadamardSq (D : Mat Int 2 2) : Mat Int 2 2 := fun i j => D i j * D i j

/-- [prefix_consistency] `prefix_consistency_fails_of_metric_hom` on the genuine model
(`exp = 2ⁿ`, `τ = 1`) with the power-law metric `G = (Qᵀ Q)^{∘2}`: the metric entry is
`4` on the full call and `1` on the prefix, and row 1 is `16/17` on the full call and
`2/3` on the prefix (kernel-checked). -/
theorem prefix_consistency_fails_of_metric_pow2 :
    takeRowsH (hplgaHeadWith pow2.toExpHom 1 hadamardSq hcexQ hcexK (hcexV (F := Rat))) ≠
        hplgaHeadWith pow2.toExpHom 1 hadamardSq (takeRowsH hcexQ) (takeRowsH hcexK)
          (takeRowsH hcexV) ∧
      hcausalAttend pow2.toExpHom 1 hcexQ (hadamardSq (hcexQᵀ ⬝ hcexQ)) hcexK
          (hcexV (F := Rat)) 1 0 = 16 / 17 ∧
      hcausalAttend pow2.toExpHom 1 (takeRowsH hcexQ)
          (hadamardSq ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ)) (takeRowsH hcexK)
          (takeRowsH (hcexV (F := Rat))) 1 0 = 2 / 3 := by
  have e1 : hadamardSq (hcexQᵀ ⬝ hcexQ) 1 1 = 4 := by
    simp only [hadamardSq]; rw [hcex_gram.1]; decide
  have e2 : hadamardSq ((takeRowsH hcexQ)ᵀ ⬝ takeRowsH hcexQ) 1 1 = 1 := by
    simp only [hadamardSq]; rw [hcex_gram.2]; decide
  refine ⟨prefix_consistency_fails_of_metric_hom pow2.toExpHom pow2_injective 1 hadamardSq
    (by rw [e1, e2]; decide), ?_, ?_⟩
  · rw [hcex_full, e1]; simp only [pow2]; decide +kernel
  · rw [hcex_prefix, e2]; simp only [pow2]; decide +kernel

end Pldr

end
