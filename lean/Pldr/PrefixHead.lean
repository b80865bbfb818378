module

public import Pldr.PrefixPipeline
public import Pldr.Positivity

/-!
# The paper's head itself is not prefix-consistent  (`[prefix_consistency]`)

Paper: PLGA computes its metric `G` from the Gram `Qᵀ Q` of all rows of the call, so a
call on `m + t` rows and the call on its first `m` rows see different metrics, and the
earlier output rows change. `Pldr.PrefixPipeline` proves this in two halves (a general
metric-separation lemma and a pipeline computation under degenerate models); here it is
one theorem about `plgaHead`, the paper's head with the full metric pipeline
`D ↦ LN ↦ learner ↦ iSwiGLU(W·+b)+ε ↦ (·)^P ↦ a·+b_a`.

* `prefix_consistency_head_fails`: for every ordered field, every injective abstract
  exponential (as `Real.exp` is) and every power with `x ^ 1 = x` (as `Real.rpow` has),
  the head with the parameters `headCexParams` (LayerNorm and learner the identity,
  `W = I`, `b ≡ −1`, `ε = 0`, `P ≡ 1`, `a = I`, `b_a = 0`) on the three-row inputs of
  `Pldr.Prefix` gives a row 1 on the full call that differs from row 1 on the first two
  rows, for every scale `τ ≠ 0`. The metric entry `G₁₁` is `iSwiGLU(D₁₁ − 1)`:
  `σ(1) > 0` on the full call (`D₁₁ = 2`) and `0` on the prefix (`D₁₁ = 1`).
* `prefix_consistency_head_fails_base`: the same with the library's power model
  `PowMap.base`.

Abstracted: `exp` (injective `ExpMap`), the power (`x ^ 1 = x` only), LayerNorm and the
learner (chosen as the identity, which the theorem's parameters are free to be). No
single-carrier exponential over `Rat` is injective (every one is `≡ 1`:
`ExpMap.eq_one_of_rat`, `ExpMap.not_injective_rat` in `Pldr.ExpRat`), so this statement
has no instance in core Lean; its genuine instance is `Real.exp`, outside core Lean. The
base-2 softmax `Int → Rat` of `Pldr.ExpHom` gives two-carrier prefix failures instead,
for a Gram metric and for a power-law one (`prefix_consistency_fails_pow2`,
`prefix_consistency_fails_of_metric_pow2`). There are no unproved assumptions.
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
LayerNorm and learner the identity, `W = I`, `b ≡ −1`, `ε = 0`, `P ≡ 1`, `a = I`,
`b_a = 0`. -/
@[expose] def headCexParams : PlgaParams α 2 where
  norm0 := fun D => D
  learner := fun D => D
  W := 1
  b := fun _ _ => -1
  P := fun _ _ => 1
  a := 1
  ba := 0
  eps := 0

/-- Under `headCexParams` and a power with `x ^ 1 = x`, the metric entry `G₁₁` is
`iSwiGLU(D₁₁ − 1)`. -/
theorem headCex_metric (E : ExpMap α) (pw : PowMap α) (hpw : ∀ x, pw.rpow x 1 = x)
    (D : Mat α 2 2) : metricOfGram E pw headCexParams D 1 1 = iSwiGLU E (D 1 1 - 1) := by
  simp only [metricOfGram, energyCurvature, headCexParams, Mat.one_mul, Mat.add_apply,
    Mat.zero_apply, metricAP, metricLM, hpw]
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
prefix-consistent: for every injective abstract exponential, every power with
`x ^ 1 = x` and every scale `τ ≠ 0`, with the parameters `headCexParams`, row 1 of the
call on the three counterexample rows differs from row 1 of the call on the first two. -/
theorem prefix_consistency_head_fails (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (pw : PowMap α) (hpw : ∀ x, pw.rpow x 1 = x)
    (τ : α) (hτ : τ ≠ 0) :
    takeRows (plgaHead E pw headCexParams τ cexQ cexK cexV) ≠
      plgaHead E pw headCexParams τ (takeRows cexQ) (takeRows cexK) (takeRows cexV) := by
  refine prefix_consistency_fails_of_metric E hinj τ hτ (metricOfGram E pw headCexParams) ?_
  rw [headCex_metric E pw hpw, headCex_metric E pw hpw, cex_gram_one_one.1,
    cex_gram_one_one.2]
  have e1 : (2 : α) - 1 = 1 := by grind
  have e0 : (1 : α) - 1 = 0 := by grind
  rw [e1, e0, iSwiGLU_zero]
  have := iSwiGLU_one_pos E
  grind

/-- [prefix_consistency] `prefix_consistency_head_fails` with the library's power model
`PowMap.base` (`x ^ y = x`). -/
theorem prefix_consistency_head_fails_base (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (τ : α) (hτ : τ ≠ 0) :
    takeRows (plgaHead E PowMap.base headCexParams τ cexQ cexK cexV) ≠
      plgaHead E PowMap.base headCexParams τ (takeRows cexQ) (takeRows cexK)
        (takeRows cexV) :=
  prefix_consistency_head_fails E hinj PowMap.base (fun _ => rfl) τ hτ

end Pldr

end
