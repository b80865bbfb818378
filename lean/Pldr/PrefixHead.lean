module

public import Pldr.PrefixPipeline
public import Pldr.Positivity
public import Pldr.ExpRat

/-!
# The paper's head itself is not prefix-consistent  (`[prefix_consistency]`)

Paper: PLGA computes its metric `G` from the Gram `Qᵀ Q` of all rows of the call, so a
call on `m + t` rows and the call on its first `m` rows see different metrics, and the
earlier output rows change. `Pldr.PrefixPipeline` proves this in two halves (a general
metric-separation lemma and a pipeline computation under degenerate models); here it is
one theorem about `plgaHead`, the paper's head with the full metric pipeline
`D ↦ LN ↦ learner ↦ iSwiGLU(W·+b)+ε ↦ (·)^P ↦ a·+b_a`.

* `prefix_consistency_head_fails`: for every ordered field, every injective abstract
  exponential (as `Real.exp` is), every power with `x ^ 1 = x` on positive bases (as
  `Real.rpow` has) and every metric floor `ε > 0` (the paper's is `10⁻⁹`), the head with
  the parameters `headCexParams ε` (LayerNorm and learner the identity, `W = I`,
  `b ≡ −1`, `P ≡ 1`, `a = I`, `b_a = 0`) on the three-row inputs of `Pldr.Prefix` gives a
  row 1 on the full call that differs from row 1 on the first two rows, for every scale
  `τ ≠ 0`. The metric entry `G₁₁` is `iSwiGLU(D₁₁ − 1) + ε`: `σ(1) + ε` on the full call
  (`D₁₁ = 2`) and `ε` on the prefix (`D₁₁ = 1`). `ε > 0` keeps `A_LM ≥ ε > 0`
  (`metric_positivity`), so the power is only ever applied to positive bases.
* `prefix_consistency_head_fails_base`: the same with the library's power model
  `PowMap.base`.
* Why it has no instance in core Lean (two obstructions, both proved):
  - `plgaHead` uses one exponential `E` for the sigmoid and for the softmax, and with
    `E ≡ 1` causal softmax is the uniform average of the visible rows, which is
    prefix-consistent whatever the metric (`prefix_consistency_expMap_one`, for every
    metric map `Φ`). Over `Rat` every `ExpMap` is `≡ 1` (`ExpMap.rat_eq_one`), so over
    `Rat` the paper's head is prefix-consistent for all parameters and inputs
    (`prefix_consistency_plgaHead_rat`): no counterexample exists there at all.
  - Separating the two exponentials does not help over `Rat`: the head's scores
    `τ Q G Kᵀ` lie in the carrier of the metric, which is a field (the sigmoid divides),
    and a field's additive group is divisible, so every exponential from it into `Rat`
    is `≡ 1` (`ExpHom.eq_one_of_field_rat`, `Pldr.PrefixHeadHom`); the factored head
    `prefix_consistency_head_fails_hom` (`ExpMap` for the sigmoid, `ExpHom` for the
    softmax) therefore needs a weight field with roots of every order, which core Lean
    does not have. The library's genuine softmax model `pow2 : Int → Rat` is not
    divisible (`Int`), which is why its instances (`prefix_consistency_fails_pow2`,
    `prefix_consistency_fails_of_metric_pow2`) use an integer metric map instead of the
    pipeline.
  LayerNorm and the learner are not an obstruction: they are arbitrary functions of the
  parameters (the identity here).

Abstracted: `exp` (injective `ExpMap`), the power (`x ^ 1 = x` on positive bases only),
LayerNorm and the learner (chosen as the identity, which the theorem's parameters are
free to be). The genuine instance is `Real.exp`, outside core Lean. There are no
unproved assumptions.
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

/-- Head parameters under which the paper's metric reads the Gram entry `D₁₁ − 1`:
LayerNorm and learner the identity, `W = I`, `b ≡ −1`, metric floor `ε` (the paper's is
`10⁻⁹ > 0`), `P ≡ 1`, `a = I`, `b_a = 0`. -/
@[expose] def headCexParams (ε : α) : PlgaParams α 2 where
  norm0 := fun D => D
  learner := fun D => D
  W := 1
  b := fun _ _ => -1
  P := fun _ _ => 1
  a := 1
  ba := 0
  eps := ε

/-- Under `headCexParams ε` with `ε > 0` and a power with `x ^ 1 = x` on positive bases,
the metric entry `G₁₁` is `iSwiGLU(D₁₁ − 1) + ε` (the base `iSwiGLU(·) + ε ≥ ε` is
positive). -/
theorem headCex_metric (E : ExpMap α) (pw : PowMap α) (hpw : ∀ x, 0 < x → pw.rpow x 1 = x)
    {ε : α} (hε : 0 < ε) (D : Mat α 2 2) :
    metricOfGram E pw (headCexParams ε) D 1 1 = iSwiGLU E (D 1 1 - 1) + ε := by
  have key : ∀ x, pw.rpow (iSwiGLU E x + ε) 1 = iSwiGLU E x + ε := fun x =>
    hpw _ (by have := metric_positivity_iSwiGLU E x; grind)
  simp only [metricOfGram, energyCurvature, headCexParams, Mat.one_mul, Mat.add_apply,
    Mat.zero_apply, metricAP, metricLM, key]
  grind

/-- `iSwiGLU 0 = 0`. -/
theorem iSwiGLU_zero (E : ExpMap α) : iSwiGLU E 0 = 0 := by
  simp only [iSwiGLU]; grind

/-- `iSwiGLU 1 = σ(1) > 0`. -/
theorem iSwiGLU_one_pos (E : ExpMap α) : 0 < iSwiGLU E 1 := by
  have h := sigmoid_pos E 1
  simp only [iSwiGLU]; grind

/-- The Gram entry `D₁₁` of the counterexample queries: `2` on the full call, `1` on the
prefix. -/
theorem cex_gram_one_one :
    gram (cexQ (α := α)) 1 1 = 2 ∧ gram (takeRows (cexQ (α := α))) 1 1 = 1 := by
  simp only [gram, takeRows, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  simp (config := { decide := true }) [cexQ]
  grind

/-- [prefix_consistency] The paper's head `plgaHead` (full metric pipeline) is not
prefix-consistent (the paper's claim for the Gram-generated metric): for every
injective abstract exponential, every power with `x ^ 1 = x` on positive bases, every
metric floor `ε > 0` and every scale `τ ≠ 0`, with the parameters `headCexParams ε`,
row 1 of the call on the three counterexample rows differs from row 1 of the call on
the first two. -/
theorem prefix_consistency_head_fails (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (pw : PowMap α)
    (hpw : ∀ x, 0 < x → pw.rpow x 1 = x) (ε : α) (hε : 0 < ε) (τ : α) (hτ : τ ≠ 0) :
    takeRows (plgaHead E pw (headCexParams ε) τ cexQ cexK cexV) ≠
      plgaHead E pw (headCexParams ε) τ (takeRows cexQ) (takeRows cexK) (takeRows cexV) := by
  refine prefix_consistency_fails_of_metric E hinj τ hτ (metricOfGram E pw (headCexParams ε)) ?_
  rw [headCex_metric E pw hpw hε, headCex_metric E pw hpw hε, cex_gram_one_one.1,
    cex_gram_one_one.2]
  have e1 : (2 : α) - 1 = 1 := by grind
  have e0 : (1 : α) - 1 = 0 := by grind
  rw [e1, e0, iSwiGLU_zero]
  have := iSwiGLU_one_pos E
  grind

/-- [prefix_consistency] `prefix_consistency_head_fails` with the library's power model
`PowMap.base` (`x ^ y = x`). -/
theorem prefix_consistency_head_fails_base (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (ε : α) (hε : 0 < ε) (τ : α) (hτ : τ ≠ 0) :
    takeRows (plgaHead E PowMap.base (headCexParams ε) τ cexQ cexK cexV) ≠
      plgaHead E PowMap.base (headCexParams ε) τ (takeRows cexQ) (takeRows cexK)
        (takeRows cexV) :=
  prefix_consistency_head_fails E hinj PowMap.base (fun _ _ => rfl) ε hε τ hτ

/-! ### Why there is no instance over `Rat`: one exponential for sigmoid and softmax -/

/-- With the constant exponential `E ≡ 1` causal attention does not read the metric:
every causal softmax row is uniform on the visible positions. -/
theorem attend_expMap_one_metric {S dk dv : Nat} (τ : α) (Q K : Mat α S dk)
    (V : Mat α S dv) (G G' : Mat α dk dk) :
    attend (causalSoftmax ExpMap.one) τ Q G K V =
      attend (causalSoftmax ExpMap.one) τ Q G' K V :=
  rfl

/-- [prefix_consistency] With `exp ≡ 1` (uniform causal averaging) the Gram-metric head
is prefix-consistent for every metric map `Φ`: the failure needs a non-constant
exponential in the softmax. -/
theorem prefix_consistency_expMap_one {m t dk dv : Nat} (τ : α)
    (Φ : Mat α dk dk → Mat α dk dk) (Q K : Mat α (m + t) dk) (V : Mat α (m + t) dv) :
    takeRows (plgaHeadWith (causalSoftmax ExpMap.one) τ Φ Q K V) =
      plgaHeadWith (causalSoftmax ExpMap.one) τ Φ (takeRows Q) (takeRows K) (takeRows V) := by
  simp only [plgaHeadWith]
  rw [attend_expMap_one_metric τ Q K V (Φ (gram Q)) 0,
    attend_expMap_one_metric τ (takeRows Q) (takeRows K) (takeRows V) (Φ (gram (takeRows Q))) 0]
  exact prefix_consistency ExpMap.one τ 0 Q K V

/-- Over `Rat` the only abstract exponential is `ExpMap.one` (`ExpMap.eq_one_of_rat`). -/
theorem ExpMap.rat_eq_one (E : ExpMap Rat) : E = ExpMap.one := by
  obtain ⟨f, h1, h2⟩ := E
  have : f = fun _ => 1 := funext fun x => ExpMap.eq_one_of_rat ⟨f, h1, h2⟩ x
  subst this
  rfl

/-- [prefix_consistency] Over `Rat` the paper's head `plgaHead` is prefix-consistent for
every exponential, power, parameters, scale and input: its one `exp` is `≡ 1`
(`ExpMap.rat_eq_one`), and uniform causal averaging ignores the metric
(`prefix_consistency_expMap_one`). So `prefix_consistency_head_fails` has no instance
over `Rat`, and not for want of a counterexample input. -/
theorem prefix_consistency_plgaHead_rat {m t dk dv : Nat} (E : ExpMap Rat) (pw : PowMap Rat)
    (p : PlgaParams Rat dk) (τ : Rat) (Q K : Mat Rat (m + t) dk) (V : Mat Rat (m + t) dv) :
    takeRows (plgaHead E pw p τ Q K V) =
      plgaHead E pw p τ (takeRows Q) (takeRows K) (takeRows V) := by
  have h := prefix_consistency_expMap_one τ (metricOfGram E pw p) Q K V
  rw [← E.rat_eq_one] at h
  exact h

end Pldr

end
