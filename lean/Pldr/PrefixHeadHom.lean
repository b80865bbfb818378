module

public import Pldr.PrefixHead
public import Pldr.ExpHom

/-!
# The factored head: sigmoid and softmax with separate exponentials  (`[prefix_consistency]`)

`plgaHead` uses one abstract exponential for the sigmoid of the metric pipeline and for
the softmax; over `Rat` that exponential is `≡ 1` and the head is prefix-consistent
(`prefix_consistency_plgaHead_rat`). Here the two are separated: the metric pipeline
keeps an `ExpMap α` for its sigmoid (any lawful model, `ExpMap.one` included), and the
softmax takes an `ExpHom α F` from the scores into a field of weights `F`.

* `plgaHeadHom Es Ex`: the head with sigmoid `Es` and softmax `Ex`; `plgaHead E` is the
  case `Es = E`, `Ex = E.toExpHom` (`plgaHead_eq_plgaHeadHom`, by `rfl`).
* `prefix_consistency_head_fails_hom`: for every sigmoid model, every injective softmax
  exponential `α → F`, every power with `x ^ 1 = x` on positive bases, every `ε > 0` and
  every `τ ≠ 0`, the factored head with `headCexParams ε` is not prefix-consistent.
  Only the softmax's exponential must be injective; the sigmoid's may be degenerate.
* Why it still has no instance in core Lean: the scores `τ Q G Kᵀ` live in the carrier
  `α` of the metric, which is a field (the sigmoid divides), and an ordered field's
  additive group is divisible (`exists_natCast_mul_eq`). Every exponential from a
  divisible group into `Rat` is `≡ 1` (`ExpHom.eq_one_of_divisible`: `exp x` has an
  `n`-th root `exp(x/n)` for every `n`, and only `1` among the positive rationals has,
  `rat_eq_one_of_forall_root`), so `ExpHom.eq_one_of_field_rat` and no injective
  `ExpHom α Rat` exists (`ExpHom.not_injective_field_rat`). An instance needs a weight
  field with roots of every order (the reals), which core Lean does not have. The
  genuine model `pow2 : ExpHom Int Rat` of `Pldr.ExpHom` works because `Int` is not
  divisible; the pipeline cannot run on `Int` scores.

There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u v

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

attribute [local instance] Lean.Grind.Semiring.natCast

/-! ### Exponentials from a divisible group into `Rat` are trivial -/

section Divisible

variable {R : Type u} [CommRing R]

/-- `exp (n · y) = (exp y)ⁿ` for an exponential with rational weights. -/
theorem ExpHom.exp_natCast_mul_rat (E : ExpHom R Rat) (n : Nat) (y : R) :
    E.exp ((n : R) * y) = E.exp y ^ n := by
  induction n with
  | zero =>
    have e : ((0 : Nat) : R) * y = 0 := by grind
    rw [e, ExpHom.exp_zero, Rat.pow_zero]
  | succ k ih =>
    have e : ((k + 1 : Nat) : R) * y = (k : R) * y + y := by grind
    rw [e, E.exp_add, ih, Rat.pow_succ]

/-- [prefix_consistency] Every exponential from a divisible additive group (each `x` is
`n · y` for every `n ≥ 1`) into the positive rationals is the constant `1`. -/
theorem ExpHom.eq_one_of_divisible (E : ExpHom R Rat)
    (hdiv : ∀ (x : R) (n : Nat), 0 < n → ∃ y, (n : R) * y = x) (x : R) : E.exp x = 1 := by
  refine rat_eq_one_of_forall_root (E.exp_pos x) fun n hn => ?_
  obtain ⟨y, hy⟩ := hdiv x n hn
  exact ⟨E.exp y, by rw [← E.exp_natCast_mul_rat, hy]⟩

end Divisible

section Field

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- An ordered field is divisible: `x = n · (x / n)` for every `n ≥ 1`. -/
theorem exists_natCast_mul_eq (x : α) (n : Nat) (hn : 0 < n) : ∃ y, (n : α) * y = x := by
  have h := natCast_ne_zero_of_pos (α := α) hn
  exact ⟨x * (n : α)⁻¹, by have := Field.mul_inv_cancel h; grind⟩

/-- [prefix_consistency] Every exponential from an ordered field (the carrier of the
head's scores) into `Rat` is the constant `1`. -/
theorem ExpHom.eq_one_of_field_rat (E : ExpHom α Rat) (x : α) : E.exp x = 1 :=
  E.eq_one_of_divisible exists_natCast_mul_eq x

/-- [prefix_consistency] So no exponential from an ordered field into `Rat` is
injective: the factored head `prefix_consistency_head_fails_hom` has no instance with
rational weights. -/
theorem ExpHom.not_injective_field_rat (E : ExpHom α Rat) :
    ¬ ∀ a b, E.exp a = E.exp b → a = b := by
  intro h
  have h01 := h 0 1 (by rw [E.eq_one_of_field_rat, E.eq_one_of_field_rat])
  have := OrderedRing.zero_lt_one (R := α)
  grind

/-! ### The factored head -/

variable {F : Type v} [Field F] [LE F] [LT F] [Std.LawfulOrderLT F] [Std.IsLinearOrder F]
  [OrderedRing F]

/-- The PLGA head with the sigmoid of its metric pipeline built on `Es : ExpMap α` and its
causal softmax on `Ex : ExpHom α F` (scores in `α`, values and outputs in `F`). -/
@[expose] def plgaHeadHom {S dk dv : Nat} (Es : ExpMap α) (Ex : ExpHom α F) (pw : PowMap α)
    (p : PlgaParams α dk) (τ : α) (Q K : Mat α S dk) (V : Mat F S dv) : Mat F S dv :=
  hplgaHeadWith Ex τ (metricOfGram Es pw p) Q K V

/-- The paper's head is the factored one with one exponential for both. -/
theorem plgaHead_eq_plgaHeadHom {S dk dv : Nat} (E : ExpMap α) (pw : PowMap α)
    (p : PlgaParams α dk) (τ : α) (Q K : Mat α S dk) (V : Mat α S dv) :
    plgaHead E pw p τ Q K V = plgaHeadHom E E.toExpHom pw p τ Q K V := rfl

/-- [prefix_consistency] The factored head (sigmoid `Es`, softmax `Ex`) with the full
metric pipeline is not prefix-consistent (the paper's claim for the Gram-generated
metric): for every sigmoid model, every injective softmax exponential `α → F`, every
power with `x ^ 1 = x` on positive bases, every `ε > 0` and every `τ ≠ 0`, with the
parameters `headCexParams ε`, row 1 of the call on the three counterexample rows differs
from row 1 of the call on the first two. -/
theorem prefix_consistency_head_fails_hom (Es : ExpMap α) (Ex : ExpHom α F)
    (hinj : ∀ a b, Ex.exp a = Ex.exp b → a = b) (pw : PowMap α)
    (hpw : ∀ x, 0 < x → pw.rpow x 1 = x) (ε : α) (hε : 0 < ε) (τ : α) (hτ : τ ≠ 0) :
    takeRowsH (plgaHeadHom Es Ex pw (headCexParams ε) τ hcexQ hcexK hcexV) ≠
      plgaHeadHom Es Ex pw (headCexParams ε) τ (takeRowsH hcexQ) (takeRowsH hcexK)
        (takeRowsH hcexV) := by
  refine prefix_consistency_fails_of_metric_hom Ex hinj τ _ ?_
  rw [headCex_metric Es pw hpw hε, headCex_metric Es pw hpw hε, hcex_gram.1, hcex_gram.2]
  have e1 : (2 : α) - 1 = 1 := by grind
  have e0 : (1 : α) - 1 = 0 := by grind
  rw [e1, e0, iSwiGLU_zero]
  have := iSwiGLU_one_pos Es
  intro h
  have h2 : τ * iSwiGLU Es 1 = 0 := by grind
  have hi := Field.mul_inv_cancel hτ
  have : τ⁻¹ * (τ * iSwiGLU Es 1) = 0 := by rw [h2]; grind
  grind

end Field

end Pldr

end
