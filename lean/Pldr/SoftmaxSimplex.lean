module

public import Pldr.Positivity
public import Pldr.Softmax

/-!
# Softmax rows lie on the simplex; equal rows iff shifted scores  (`[softmax_simplex]`)

Paper (Prop. 3.12, Prop. 5.2(iii) row level): a masked softmax row is a probability
vector supported on the allowed entries — positive there, exactly zero on masked
entries, summing to one — and two score rows give the same attention row if and only
if they differ by one constant on the allowed entries (for an injective exponential).

* `softmax_simplex`: positivity on allowed entries, zero on masked ones, row sum `1`
  (when at least one entry is allowed; an all-masked row is the zero row).
* `softmax_simplex_eq_iff`: for an injective `exp`, `softmax(x) = softmax(y)` iff
  `x = y + c` on the allowed entries, for some constant `c`.
* `softmax_simplex_causal`: every causal row sums to one (entry `i` of row `i` is
  always allowed).

Abstracted: `exp` is an `ExpMap`; injectivity (true of the real exponential) is a
hypothesis of `softmax_simplex_eq_iff` only. Masking is exact (weight `0`). There are no
unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- A sum of nonnegative terms is at least any one of them. -/
theorem le_finSum_of_nonneg {n : Nat} {f : Fin n → α} (h : ∀ i, 0 ≤ f i) (j : Fin n) :
    f j ≤ finSum f := by
  rw [← finSum_ite_eq j f]
  exact finSum_le_finSum fun i => by have := h i; split <;> grind

/-- The softmax denominator `Σ_{allowed l} exp x_l`. -/
@[expose] def smDenom {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α) : α :=
  finSum fun l => if mask l = true then E.exp (x l) else 0

/-- The denominator is at least every allowed term, hence positive when some entry is
allowed. -/
theorem smDenom_ge {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α)
    (j : Fin n) (hj : mask j = true) : E.exp (x j) ≤ smDenom E mask x := by
  calc E.exp (x j) = (if mask j = true then E.exp (x j) else 0) := (if_pos hj).symm
    _ ≤ smDenom E mask x :=
      le_finSum_of_nonneg (f := fun l => if mask l = true then E.exp (x l) else 0)
        (fun l => by
          have := E.exp_pos (x l)
          show 0 ≤ (if mask l = true then E.exp (x l) else 0)
          split <;> grind) j

/-- The denominator is positive when some entry is allowed. -/
theorem smDenom_pos {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α)
    (j : Fin n) (hj : mask j = true) : 0 < smDenom E mask x := by
  have := smDenom_ge E mask x j hj; have := E.exp_pos (x j); grind

/-- Masked softmax reads the scores only on allowed entries. -/
theorem msoftmax_congr {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) {x y : Fin n → α}
    (h : ∀ j, mask j = true → x j = y j) : msoftmax E mask x = msoftmax E mask y := by
  have hd : (fun l => if mask l = true then E.exp (x l) else 0) =
      fun l => if mask l = true then E.exp (y l) else 0 :=
    funext fun l => by by_cases hl : mask l = true <;> simp [hl, h]
  funext j
  simp only [msoftmax]
  rw [hd]
  by_cases hj : mask j = true <;> simp [hj, h]

/-- [softmax_simplex] Prop. 3.12: a masked softmax row is positive on allowed entries,
zero on masked entries, and sums to `1` as soon as one entry is allowed. -/
theorem softmax_simplex {n : Nat} (E : ExpMap α) (mask : Fin n → Bool) (x : Fin n → α) :
    (∀ j, mask j = true → 0 < msoftmax E mask x j) ∧
      (∀ j, mask j = false → msoftmax E mask x j = 0) ∧
      ((∃ j, mask j = true) → finSum (msoftmax E mask x) = 1) := by
  refine ⟨fun j hj => ?_, fun j hj => by simp [msoftmax, hj], fun ⟨j0, hj0⟩ => ?_⟩
  · have hZ := smDenom_pos E mask x j hj
    have he := E.exp_pos (x j)
    have hi := inv_pos_of_pos hZ
    simp only [msoftmax]
    rw [if_pos hj, Field.div_eq_mul_inv]
    exact OrderedRing.mul_pos he hi
  · have hZ := smDenom_pos E mask x j0 hj0
    have hne : smDenom E mask x ≠ 0 := by grind
    have h : msoftmax E mask x = fun j =>
        (if mask j = true then E.exp (x j) else 0) * (smDenom E mask x)⁻¹ := by
      funext j; simp only [msoftmax, smDenom, Field.div_eq_mul_inv]; split <;> grind
    rw [h, ← finSum_mul]
    show smDenom E mask x * (smDenom E mask x)⁻¹ = 1
    exact Field.mul_inv_cancel hne

/-- [softmax_simplex] Every row of causal softmax sums to one. -/
theorem softmax_simplex_causal {n : Nat} (E : ExpMap α) (i : Fin n) (x : Fin n → α) :
    finSum (causalSoftmax E i x) = 1 :=
  (softmax_simplex E (causalMask i) x).2.2 ⟨i, by simp [causalMask]⟩

/-- [softmax_simplex] Prop. 5.2(iii), row level: for an injective exponential, two
score rows give the same masked softmax row iff they differ by one constant on the
allowed entries. -/
theorem softmax_simplex_eq_iff {n : Nat} (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (mask : Fin n → Bool) (x y : Fin n → α) :
    msoftmax E mask x = msoftmax E mask y ↔
      ∃ c, ∀ j, mask j = true → x j = y j + c := by
  constructor
  · intro h
    by_cases hne : ∃ j0, mask j0 = true
    · obtain ⟨j0, hj0⟩ := hne
      refine ⟨x j0 - y j0, fun j hj => ?_⟩
      have hZx := smDenom_pos E mask x j0 hj0
      have hZy := smDenom_pos E mask y j0 hj0
      have h1 := congrFun h j
      have h2 := congrFun h j0
      simp only [msoftmax] at h1 h2
      rw [if_pos hj, if_pos hj] at h1
      rw [if_pos hj0, if_pos hj0] at h2
      change E.exp (x j) / smDenom E mask x = E.exp (y j) / smDenom E mask y at h1
      change E.exp (x j0) / smDenom E mask x = E.exp (y j0) / smDenom E mask y at h2
      have k1 : E.exp (x j) * smDenom E mask y = E.exp (y j) * smDenom E mask x := by
        grind
      have k2 : E.exp (x j0) * smDenom E mask y = E.exp (y j0) * smDenom E mask x := by
        grind
      have k3 : E.exp (x j) * E.exp (y j0) = E.exp (y j) * E.exp (x j0) := by
        have : (E.exp (x j) * E.exp (y j0) - E.exp (y j) * E.exp (x j0)) *
            smDenom E mask y = 0 := by grind
        grind
      rw [← E.exp_add, ← E.exp_add] at k3
      have := hinj _ _ k3
      grind
    · refine ⟨0, fun j hj => absurd ⟨j, hj⟩ hne⟩
  · rintro ⟨c, hc⟩
    rw [msoftmax_congr E mask hc]
    exact softmax_shift E mask y c

end Pldr

end
