module

public import Pldr.Float.Ieee

/-!
# Flush to zero  (`[fp_flush_to_zero]`)

Kernels that run with flush-to-zero (FTZ: x86 MXCSR.FZ, CUDA `-ftz=true`, the default of
many GPU fast-math paths) replace every result whose magnitude is below the smallest normal
number `2^emin` by zero. Gradual underflow is gone: the exact sum of two floating-point
numbers below the normal range is no longer representable by the arithmetic, so the
`η`-free model of summation trees (`Format.sumRounding`, `fp_ieee_rounding_lattice`) no
longer holds, and every partial sum carries an absolute error up to `2^emin`.

* `Format.ftz`: `x ↦ 0` when `|x| < 2^emin` (the exact result), else `rne x`;
  `Format.daz` (denormals-are-zero on inputs): `x ↦ 0` when `|x| < 2^emin`.
* `Format.ftzRounding : RoundingAbs Rat`: `|ftz x − x| ≤ u |x| + η_ftz`,
  `η_ftz = 2^emin` (`fp_flush_to_zero_rounding`); `_daz`: `|daz x − x| ≤ 2^emin`;
  `fp_flush_to_zero_sum_inexact`: with binary32, `1.5·2^−126 − 2^−126 = 2^−127` is flushed:
  a sum of two normal numbers with error `2^−127 > u · 2^−127`, so no `η`-free bound holds.
* `STree.absv_eval_sub_sum_le_abs`: the general summation bound when every node rounds
  with `|fl x − x| ≤ u |x| + ρ`: for a tree of depth `d` with `N` nodes, leaves within
  `e · M i + η i` of the terms, `((1 + γ_d)(1 + e) − 1) Σ M + (1 + γ_d)(Σ η + N ρ)`.
* `[fp_flush_to_zero]` `fp_flush_to_zero`: any summation order of `n` terms,
  `|ŝ − Σ f| ≤ γ_{n−1} Σ |f| + (1 + γ_{n−1})(n − 1) ρ`; `_perturbed`; `_dot_product`
  (products flushed as well: `γ_n Σ |a||b| + (1 + γ_{n−1})(n ρ_p + (n − 1) ρ)`); `_matmul`;
  `_ieee`: the same for genuine FTZ arithmetic on a format (`ρ = 2^emin`).

The theorems over an ordered field take any `RoundingAbs` (IEEE rounding with gradual
underflow is one, with `ρ = η = 2^(emin − p)`, `Format.roundingAbs`). Overflow is outside
the model. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

local infixl:75 " ⬝ " => Mat.mul

namespace STree

variable {ι : Type} {α : Type u}

/-- The number of nodes (additions) of a tree. -/
@[expose] def nodes : STree ι → Nat
  | leaf _ => 0
  | node l r => l.nodes + r.nodes + 1

/-- A tree has one node fewer than leaves. -/
theorem nodes_add_one : ∀ t : STree ι, t.nodes + 1 = t.size
  | leaf _ => rfl
  | node l r => by
    have := nodes_add_one l; have := nodes_add_one r
    simp only [nodes, size]; omega

section Field

variable [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α] [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- A summation order of `Fin n` (`n ≥ 1`) has `n − 1` nodes. -/
theorem IsOrder.nodes_eq {n : Nat} {t : STree (Fin n)} (ht : t.IsOrder α) : t.nodes + 1 = n := by
  rw [nodes_add_one]; exact ht.size_eq

/-- The general error bound of a summation tree whose nodes round with an absolute term:
every node `|fl x − x| ≤ u |x| + ρ` (flush-to-zero: `ρ = 2^emin`), leaves `g i` within
`e · M i + η i` of the terms `f i` (`|f i| ≤ M i`); for a tree of depth `d` (`d u < 1`)
with `N` nodes:
`|ŝ − Σ f| ≤ ((1 + γ_d)(1 + e) − 1) Σ M + (1 + γ_d)(Σ η + N ρ)`. -/
theorem absv_eval_sub_sum_le_abs (R : RoundingAbs α) {f g M η : ι → α} {e : α} (he : 0 ≤ e)
    (hη : ∀ i, 0 ≤ η i) (hM : ∀ i, absv (f i) ≤ M i)
    (hg : ∀ i, absv (g i - f i) ≤ e * M i + η i) :
    ∀ t : STree ι, ((t.depth : Nat) : α) * R.u < 1 →
      absv (t.eval R.fl g - t.sum f) ≤
        ((1 + gam R.u t.depth) * (1 + e) - 1) * t.sum M +
          (1 + gam R.u t.depth) * (t.sum η + (t.nodes : α) * R.η)
  | leaf i, _ => by
    simp only [eval, sum, depth, nodes]
    have : gam R.u 0 = 0 := by simp [gam]; grind
    rw [this]; have := hg i; grind
  | node l r, hd => by
    have hu := R.u_nonneg
    have hρ := R.η_nonneg
    have hM0 : ∀ i, 0 ≤ M i := fun i => Std.le_trans (absv_nonneg _) (hM i)
    simp only [eval, sum, depth, nodes] at hd ⊢
    generalize hdl : l.depth = dl at *
    generalize hdr : r.depth = dr at *
    have hmax : ((max dl dr : Nat) : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_succ (max dl dr))
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have hdl' : (dl : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_max_left dl dr)
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have hdr' : (dr : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_max_right dl dr)
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have ihl := absv_eval_sub_sum_le_abs R he hη hM hg l (by rw [hdl]; exact hdl')
    have ihr := absv_eval_sub_sum_le_abs R he hη hM hg r (by rw [hdr]; exact hdr')
    rw [hdl] at ihl; rw [hdr] at ihr
    have gl := gam_mono hu (Nat.le_max_left dl dr) hmax
    have gr := gam_mono hu (Nat.le_max_right dl dr) hmax
    have gl0 := gam_nonneg hu hdl'
    have gr0 := gam_nonneg hu hdr'
    have hKl : (1 + gam R.u dl) * (1 + e) ≤ (1 + gam R.u (max dl dr)) * (1 + e) :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) (by grind)
    have hKr : (1 + gam R.u dr) * (1 + e) ≤ (1 + gam R.u (max dl dr)) * (1 + e) :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) (by grind)
    have Ml0 := sum_nonneg hM0 l
    have Mr0 := sum_nonneg hM0 r
    -- the absolute parts: H = Σ η + N ρ
    have hNl : (0 : α) ≤ (l.nodes : α) := OrderedRing.natCast_nonneg
    have hNr : (0 : α) ≤ (r.nodes : α) := OrderedRing.natCast_nonneg
    have eN : ((l.nodes + r.nodes + 1 : Nat) : α) = (l.nodes : α) + (r.nodes : α) + 1 := by
      grind
    rw [eN]
    generalize hHl : l.sum η + (l.nodes : α) * R.η = Hl at *
    generalize hHr : r.sum η + (r.nodes : α) * R.η = Hr at *
    have Hl0 : 0 ≤ Hl := by
      rw [← hHl]; have := sum_nonneg hη l; have := OrderedRing.mul_nonneg hNl hρ; grind
    have Hr0 : 0 ≤ Hr := by
      rw [← hHr]; have := sum_nonneg hη r; have := OrderedRing.mul_nonneg hNr hρ; grind
    have eH : l.sum η + r.sum η + ((l.nodes : α) + (r.nodes : α) + 1) * R.η =
        Hl + Hr + R.η := by rw [← hHl, ← hHr]; grind
    rw [eH]
    have hCl : (1 + gam R.u dl) * Hl ≤ (1 + gam R.u (max dl dr)) * Hl :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) Hl0
    have hCr : (1 + gam R.u dr) * Hr ≤ (1 + gam R.u (max dl dr)) * Hr :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) Hr0
    generalize hK : (1 + gam R.u (max dl dr)) * (1 + e) = K at *
    generalize hC : 1 + gam R.u (max dl dr) = C at *
    have el : absv (l.eval R.fl g - l.sum f) ≤ (K - 1) * l.sum M + C * Hl := by
      have := OrderedRing.mul_le_mul_of_nonneg_right
        (by grind : (1 + gam R.u dl) * (1 + e) - 1 ≤ K - 1) Ml0
      grind
    have er : absv (r.eval R.fl g - r.sum f) ≤ (K - 1) * r.sum M + C * Hr := by
      have := OrderedRing.mul_le_mul_of_nonneg_right
        (by grind : (1 + gam R.u dr) * (1 + e) - 1 ≤ K - 1) Mr0
      grind
    have fl := absv_sum_le hM l
    have fr := absv_sum_le hM r
    have al : absv (l.eval R.fl g) ≤ K * l.sum M + C * Hl := by
      have := absv_add_le (l.eval R.fl g - l.sum f) (l.sum f)
      have e1 : l.eval R.fl g - l.sum f + l.sum f = l.eval R.fl g := by grind
      rw [e1] at this; grind
    have ar : absv (r.eval R.fl g) ≤ K * r.sum M + C * Hr := by
      have := absv_add_le (r.eval R.fl g - r.sum f) (r.sum f)
      have e1 : r.eval R.fl g - r.sum f + r.sum f = r.eval R.fl g := by grind
      rw [e1] at this; grind
    have hab := absv_add_le (l.eval R.fl g) (r.eval R.fl g)
    have hround := R.rel (l.eval R.fl g + r.eval R.fl g)
    have hround' : absv (R.fl (l.eval R.fl g + r.eval R.fl g) - (l.eval R.fl g + r.eval R.fl g))
        ≤ R.u * (K * (l.sum M + r.sum M) + C * (Hl + Hr)) + R.η := by
      have := OrderedRing.mul_le_mul_of_nonneg_left
        (by grind : absv (l.eval R.fl g + r.eval R.fl g) ≤
          K * (l.sum M + r.sum M) + C * (Hl + Hr)) hu
      grind
    have h4 : (1 + R.u) * C ≤ 1 + gam R.u (max dl dr + 1) := by
      rw [← hC]
      have h1 := one_add_le_one_add_gam_one hu (by
        have := natCast_le_natCast (α := α) (Nat.le_add_left 1 (max dl dr))
        have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind)
      have h2 := one_add_gam_mul_le (j := max dl dr) (k := 1) hu hd
      have g0 := gam_nonneg hu hmax
      have h3 : (1 + R.u) * (1 + gam R.u (max dl dr)) ≤
          (1 + gam R.u 1) * (1 + gam R.u (max dl dr)) :=
        OrderedRing.mul_le_mul_of_nonneg_right h1 (by grind)
      grind
    have hstep : (1 + R.u) * K ≤ (1 + gam R.u (max dl dr + 1)) * (1 + e) := by
      have hKC : K = C * (1 + e) := by rw [← hK, ← hC]
      rw [hKC]
      have := OrderedRing.mul_le_mul_of_nonneg_right h4 (by grind : (0 : α) ≤ 1 + e)
      grind
    have g1 := gam_nonneg hu hd
    have tri := absv_add_le
      (R.fl (l.eval R.fl g + r.eval R.fl g) - (l.eval R.fl g + r.eval R.fl g))
      ((l.eval R.fl g - l.sum f) + (r.eval R.fl g - r.sum f))
    have tri2 := absv_add_le (l.eval R.fl g - l.sum f) (r.eval R.fl g - r.sum f)
    have hs := OrderedRing.mul_le_mul_of_nonneg_right hstep (by grind : 0 ≤ l.sum M + r.sum M)
    have hs2 := OrderedRing.mul_le_mul_of_nonneg_right h4 (by grind : 0 ≤ Hl + Hr)
    have hs3 : R.η ≤ (1 + gam R.u (max dl dr + 1)) * R.η := by
      have := OrderedRing.mul_le_mul_of_nonneg_right
        (by grind : (1 : α) ≤ 1 + gam R.u (max dl dr + 1)) hρ
      grind
    have e2 : R.fl (l.eval R.fl g + r.eval R.fl g) - (l.sum f + r.sum f) =
        R.fl (l.eval R.fl g + r.eval R.fl g) - (l.eval R.fl g + r.eval R.fl g) +
          ((l.eval R.fl g - l.sum f) + (r.eval R.fl g - r.sum f)) := by grind
    rw [e2]
    grind

end Field

end STree

section Bounds

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- [fp_flush_to_zero] The perturbed-leaf bound for a summation order of `n ≥ 1` terms
whose nodes round with an absolute term `ρ` (flush-to-zero): leaves within `e M i + η i`
of the terms (`|f i| ≤ M i`), `(n − 1) u < 1`:
`|ŝ − Σ f| ≤ ((1 + γ_{n−1})(1 + e) − 1) Σ M + (1 + γ_{n−1})(Σ η + (n − 1) ρ)`. -/
theorem fp_flush_to_zero_perturbed {n : Nat} (R : RoundingAbs α) {f g M η : Fin n → α}
    {e : α} (he : 0 ≤ e) (hη : ∀ i, 0 ≤ η i) (hM : ∀ i, absv (f i) ≤ M i)
    (hg : ∀ i, absv (g i - f i) ≤ e * M i + η i)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn : ((n - 1 : Nat) : α) * R.u < 1) :
    absv (t.eval R.fl g - finSum f) ≤
      ((1 + gam R.u (n - 1)) * (1 + e) - 1) * finSum M +
        (1 + gam R.u (n - 1)) * (finSum η + ((n - 1 : Nat) : α) * R.η) := by
  have hdn : t.depth ≤ n - 1 := by have := ht.depth_le (α := α); omega
  have hd : (t.depth : α) * R.u < 1 := by
    have := natCast_le_natCast (α := α) hdn
    have := OrderedRing.mul_le_mul_of_nonneg_right this R.u_nonneg; grind
  have h := STree.absv_eval_sub_sum_le_abs R he hη hM hg t hd
  rw [ht f, ht M, ht η] at h
  have hN : t.nodes = n - 1 := by have := ht.nodes_eq; omega
  rw [hN] at h
  have g := gam_mono R.u_nonneg hdn hn
  have g0 := gam_nonneg R.u_nonneg hd
  have hM0 : 0 ≤ finSum M := finSum_nonneg fun i => Std.le_trans (absv_nonneg _) (hM i)
  have hH0 : 0 ≤ finSum η + ((n - 1 : Nat) : α) * R.η := by
    have := finSum_nonneg hη
    have := OrderedRing.mul_nonneg (OrderedRing.natCast_nonneg (R := α) (a := n - 1)) R.η_nonneg
    grind
  have h1 := OrderedRing.mul_le_mul_of_nonneg_right
    (OrderedRing.mul_le_mul_of_nonneg_right (by grind : 1 + gam R.u t.depth ≤ 1 + gam R.u (n - 1))
      (by grind : (0 : α) ≤ 1 + e)) hM0
  have h2 := OrderedRing.mul_le_mul_of_nonneg_right
    (by grind : 1 + gam R.u t.depth ≤ 1 + gam R.u (n - 1)) hH0
  grind

/-- [fp_flush_to_zero] Summation in any order when every partial sum is rounded with an
absolute term `ρ` (flush-to-zero, `ρ = 2^emin`: a partial sum below the normal range is
flushed, not kept): for every summation tree adding each of the `n` terms once,
`(n − 1) u < 1`: `|ŝ − Σ f| ≤ γ_{n−1} Σ |f| + (1 + γ_{n−1})(n − 1) ρ`
(Higham, *Accuracy and Stability*, §2.1 and Lemma 3.1 with an absolute term per
operation; Demmel, "Underflow and the reliability of numerical software", 1984). -/
theorem fp_flush_to_zero {n : Nat} (R : RoundingAbs α) (f : Fin n → α) (t : STree (Fin n))
    (ht : t.IsOrder α) (hn : ((n - 1 : Nat) : α) * R.u < 1) :
    absv (t.eval R.fl f - finSum f) ≤
      gam R.u (n - 1) * finSum (fun i => absv (f i)) +
        (1 + gam R.u (n - 1)) * (((n - 1 : Nat) : α) * R.η) := by
  have h := fp_flush_to_zero_perturbed R (f := f) (g := f) (M := fun i => absv (f i))
    (η := fun _ => 0) (e := 0) (Std.le_refl 0) (fun _ => Std.le_refl 0) (fun _ => Std.le_refl _)
    (fun i => by
      have : f i - f i = 0 := by grind
      rw [this]; have := absv_nonneg (f i); unfold absv; split <;> grind) t ht hn
  rw [finSum_zero] at h
  grind

/-- [fp_flush_to_zero] A dot product with flush-to-zero: every product rounded with
relative error `u` and absolute term `ρ_p` (or exact: FMA), the products added by any
summation order whose nodes round with absolute term `ρ`, `n ≥ 1`, `n u < 1`:
`|â·b − a·b| ≤ γ_n Σ |aᵢ| |bᵢ| + (1 + γ_{n−1})(n ρ_p + (n − 1) ρ)`. -/
theorem fp_flush_to_zero_dot_product {n : Nat} (R : RoundingAbs α) (a b g : Fin n → α)
    {ρp : α} (hρp : 0 ≤ ρp) (hg : ∀ i, absv (g i - a i * b i) ≤ R.u * absv (a i * b i) + ρp)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn1 : 1 ≤ n) (hn : (n : α) * R.u < 1) :
    absv (t.eval R.fl g - finSum (fun i => a i * b i)) ≤
      gam R.u n * finSum (fun i => absv (a i) * absv (b i)) +
        (1 + gam R.u (n - 1)) * ((n : α) * ρp + ((n - 1 : Nat) : α) * R.η) := by
  have hu := R.u_nonneg
  have hpred := pred_mul_lt hu hn
  have h := fp_flush_to_zero_perturbed R (f := fun i => a i * b i)
    (M := fun i => absv (a i * b i)) (η := fun _ => ρp) hu (fun _ => hρp) (fun i => by grind)
    hg t ht hpred
  rw [finSum_const] at h
  have hm : (fun i => absv (a i * b i)) = fun i => absv (a i) * absv (b i) :=
    funext fun i => absv_mul _ _
  rw [hm] at h
  have hM0 : 0 ≤ finSum (fun i => absv (a i) * absv (b i)) :=
    finSum_nonneg fun i => OrderedRing.mul_nonneg (absv_nonneg _) (absv_nonneg _)
  have := OrderedRing.mul_le_mul_of_nonneg_right
    (by have := one_add_gam_pred_mul_le hu hn1 hn; grind :
      (1 + gam R.u (n - 1)) * (1 + R.u) - 1 ≤ gam R.u n) hM0
  grind

/-- [fp_flush_to_zero] The matrix form: every entry of `A B` a flush-to-zero dot product
in its own order:
`|Ĉ i k − (A B) i k| ≤ γ_n (|A| |B|) i k + (1 + γ_{n−1})(n ρ_p + (n − 1) ρ)`. -/
theorem fp_flush_to_zero_matmul {m n p : Nat} (R : RoundingAbs α) (A : Mat α m n)
    (B : Mat α n p) (g : Fin m → Fin p → Fin n → α) {ρp : α} (hρp : 0 ≤ ρp)
    (hg : ∀ i k j, absv (g i k j - A i j * B j k) ≤ R.u * absv (A i j * B j k) + ρp)
    (T : Fin m → Fin p → STree (Fin n)) (hT : ∀ i k, (T i k).IsOrder α)
    (hn1 : 1 ≤ n) (hn : (n : α) * R.u < 1) (i : Fin m) (k : Fin p) :
    absv ((T i k).eval R.fl (g i k) - (A ⬝ B) i k) ≤
      gam R.u n * ((fun i j => absv (A i j)) ⬝ (fun j k => absv (B j k))) i k +
        (1 + gam R.u (n - 1)) * ((n : α) * ρp + ((n - 1 : Nat) : α) * R.η) := by
  simp only [Mat.mul_apply]
  exact fp_flush_to_zero_dot_product R (fun j => A i j) (fun j => B j k) (g i k) hρp (hg i k)
    (T i k) (hT i k) hn1 hn

end Bounds

/-! ### Flush-to-zero on a binary format -/

namespace Format

variable (F : Format)

open Classical in
/-- Flush-to-zero: a result whose exact value is below the smallest normal number in
magnitude becomes `0`; otherwise round to nearest. -/
@[expose] def ftz (x : Rat) : Rat := if absv x < F.minNormal then 0 else F.rne x

open Classical in
/-- Denormals-are-zero on inputs: a subnormal input is read as `0`. -/
@[expose] def daz (x : Rat) : Rat := if absv x < F.minNormal then 0 else x

theorem minNormal_pos : 0 < F.minNormal := two_zpow_pos _

end Format

/-- [fp_flush_to_zero] One flush-to-zero rounding: `|ftz x − x| ≤ u |x| + 2^emin`. -/
theorem fp_flush_to_zero_rounding (F : Format) (x : Rat) :
    absv (F.ftz x - x) ≤ F.u * absv x + F.minNormal := by
  have hux := OrderedRing.mul_nonneg F.u_nonneg (absv_nonneg x)
  unfold Format.ftz
  split
  · have : absv (0 - x) = absv x := by
      have e : (0 : Rat) - x = -x := by grind
      rw [e]; unfold absv; split <;> split <;> grind
    rw [this]; grind
  · have := fp_ieee_rounding_normal F (x := x) (by grind)
    have := F.minNormal_pos
    grind

/-- [fp_flush_to_zero] Denormals-are-zero: `|daz x − x| ≤ 2^emin`. -/
theorem fp_flush_to_zero_daz (F : Format) (x : Rat) : absv (F.daz x - x) ≤ F.minNormal := by
  unfold Format.daz
  split
  · have : absv (0 - x) = absv x := by
      have e : (0 : Rat) - x = -x := by grind
      rw [e]; unfold absv; split <;> split <;> grind
    rw [this]; grind
  · rw [absv_sub_self']; exact Std.le_of_lt F.minNormal_pos

/-- The flush-to-zero rounding of a format as a `RoundingAbs`: `u = 2^(−p)`,
`η_ftz = 2^emin`. -/
@[expose] def Format.ftzRounding (F : Format) : RoundingAbs Rat where
  fl := F.ftz
  u := F.u
  η := F.minNormal
  u_nonneg := F.u_nonneg
  η_nonneg := Std.le_of_lt F.minNormal_pos
  rel := fp_flush_to_zero_rounding F

attribute [local instance] Lean.Grind.Semiring.natCast

/-- [fp_flush_to_zero] Genuine flush-to-zero arithmetic on a format: products and partial
sums flushed below `2^emin`, any summation order, `n ≥ 1`, `n u < 1`:
`|ŝ − Σ aᵢbᵢ| ≤ γ_n Σ |aᵢ||bᵢ| + (1 + γ_{n−1})(2n − 1) 2^emin`. -/
theorem fp_flush_to_zero_ieee (F : Format) {n : Nat} (a b : Fin n → Rat) (t : STree (Fin n))
    (ht : t.IsOrder Rat) (hn1 : 1 ≤ n) (hn : (n : Rat) * F.u < 1) :
    absv (t.eval F.ftz (fun i => F.ftz (a i * b i)) - finSum (fun i => a i * b i)) ≤
      gam F.u n * finSum (fun i => absv (a i) * absv (b i)) +
        (1 + gam F.u (n - 1)) * ((n : Rat) * F.minNormal + ((n - 1 : Nat) : Rat) * F.minNormal) :=
  fp_flush_to_zero_dot_product F.ftzRounding a b (fun i => F.ftz (a i * b i))
    (Std.le_of_lt F.minNormal_pos) (fun _ => fp_flush_to_zero_rounding F _) t ht hn1 hn

/-- [fp_flush_to_zero] The absolute term is needed: in binary32 with flush-to-zero the sum
of the normal numbers `3 · 2^−127` and `−2^−126` is `2^−127`, flushed to `0`, an error of
`2^−127 > u · 2^−127`; with gradual underflow it is exact (`fp_ieee_rounding_lattice`). -/
theorem fp_flush_to_zero_sum_inexact :
    binary32.ftz (3 * 2 ^ (-127 : Int) + -2 ^ (-126 : Int)) = 0 ∧
      binary32.u * absv ((3 : Rat) * 2 ^ (-127 : Int) + -2 ^ (-126 : Int)) <
        absv (binary32.ftz (3 * 2 ^ (-127 : Int) + -2 ^ (-126 : Int)) -
          (3 * 2 ^ (-127 : Int) + -2 ^ (-126 : Int))) ∧
      binary32.rne (3 * 2 ^ (-127 : Int) + -2 ^ (-126 : Int)) =
        3 * 2 ^ (-127 : Int) + -2 ^ (-126 : Int) := by
  have e : (3 : Rat) * 2 ^ (-127 : Int) + -2 ^ (-126 : Int) = 2 ^ (-127 : Int) := by
    have : (2 : Rat) ^ (-126 : Int) = 2 ^ (-127 : Int) * 2 := by
      rw [show (-126 : Int) = -127 + 1 by decide, two_zpow_add, two_zpow_one]
    rw [this]; grind
  have hp := two_zpow_pos (-127)
  have ha : absv ((2 : Rat) ^ (-127 : Int)) = 2 ^ (-127 : Int) := by
    unfold absv; simp [Std.le_of_lt hp]
  have hlt : absv ((2 : Rat) ^ (-127 : Int)) < binary32.minNormal := by
    rw [ha]; exact two_zpow_lt (by decide)
  have hz : binary32.ftz (2 ^ (-127 : Int)) = 0 := by
    unfold Format.ftz; rw [if_pos hlt]
  rw [e, hz]
  refine ⟨rfl, ?_, ?_⟩
  · have hu : binary32.u < 1 := by
      rw [fp_ieee_rounding_binary32.1]; decide +kernel
    have : (0 : Rat) - 2 ^ (-127 : Int) = -(2 ^ (-127 : Int)) := by grind
    rw [this, ha]
    have : absv (-(2 : Rat) ^ (-127 : Int)) = 2 ^ (-127 : Int) := by
      unfold absv; split <;> grind
    rw [this]
    have := OrderedRing.mul_lt_mul_of_pos_right hu hp
    grind
  · apply fp_ieee_rounding_grid
    refine ⟨1, -127, by show ((-126 : Int) - ((24 : Nat) : Int) + 1) ≤ -127; omega, ?_, by simp⟩
    have : absv ((1 : Int) : Rat) = 1 := by
      rw [show ((1 : Int) : Rat) = 1 from rfl]; unfold absv; split <;> grind
    rw [this]
    show (1 : Rat) < 2 ^ ((24 : Nat) : Int)
    rw [two_zpow_natCast]; decide +kernel

end Pldr

end
