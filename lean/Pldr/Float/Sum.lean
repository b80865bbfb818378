module

public import Pldr.Float.Model

/-!
# Floating-point sums in any order, dot products, matrix products, mixed precision
(`[fp_summation]`, `[fp_dot_product]`, `[fp_matmul]`, `[fp_mixed_precision]`)

A *summation tree* `STree ι` is a binary tree whose leaves are indices; evaluated in
floating point (`STree.eval`) every node rounds the exact sum of its two children's
computed values, `fl (a + b)`, and the leaves are the terms as given. Every order of
summation is a tree: left to right (`STree.seq`), pairwise, blocked, the lanes of a SIMD
accumulator followed by a horizontal reduction, a BLAS kernel's register and cache
blocking. A fused multiply-add `fl (a * b + c)` is a node whose child is a leaf holding
the exact product `a * b`: the leaf hypotheses below admit every leaf with relative
error at most `u` (a rounded product) or `0` (an exact product feeding an FMA), so a
kernel may mix the two. `STree.IsOrder` says that a tree over `Fin n` adds every index
exactly once (its sum is `finSum`); such a tree has depth at most `n − 1`.

* `STree.absv_eval_sub_sum_le`: the general statement, for perturbed leaves: if each leaf
  `g i` is within `e · M i + η i` of the term `f i` (`|f i| ≤ M i`; `η i ≥ 0` an absolute
  part, a product that underflowed), the computed sum is within
  `((1 + γ_d)(1 + e) − 1) · Σ M + (1 + γ_d) · Σ η` of the exact one, `d` the depth. The
  nodes carry no absolute part: the exact sum of two floating-point numbers that lies
  below the normal range is representable (IEEE gradual underflow), so it is not rounded.
* `[fp_summation]`: any order of `n` terms: `|ŝ − Σ f| ≤ γ_{n−1} Σ |f|`; with perturbed
  leaves `fp_summation_perturbed`.
* `[fp_dot_product]`: `|â·b − a·b| ≤ γ_n Σ |aᵢ| |bᵢ| + (1 + γ_{n−1}) Σ ηᵢ`, products
  rounded (underflow `ηᵢ`) or fused.
* `[fp_matmul]`: entrywise `|Ĉ − A B| ≤ γ_n |A| |B| + (1 + γ_{n−1}) Σ η`, each entry by
  its own tree.
* `[fp_mixed_precision]`: inputs rounded at `u_a`, `u_b` (e.g. float64 data to bfloat16,
  in its normal range), products and sums at `u_acc` (float32 accumulation), the result
  rounded at `u_out` (underflow `η_out`):
  `|ŷ − Σ a b| ≤ ((1 + u_out)(1 + u_a)(1 + u_b)(1 + γ_n(u_acc)) − 1) Σ |aᵢ| |bᵢ|
  + (1 + u_out)(1 + γ_{n−1}) Σ ηᵢ + η_out`; and the matrix form. A bias is one more term
  (`c · 1`).

The floating-point model is that of `Pldr.Float.Model`; overflow is outside it. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

local infixl:75 " ⬝ " => Mat.mul

/-- A summation tree: leaves are indices, nodes add their two children. -/
inductive STree (ι : Type) : Type where
  /-- One term. -/
  | leaf (i : ι) : STree ι
  /-- The sum of two subtrees. -/
  | node (l r : STree ι) : STree ι

namespace STree

variable {ι : Type} {α : Type u}

/-- The exact sum of `f` over the leaves (with multiplicity). -/
@[expose] def sum [Add α] (f : ι → α) : STree ι → α
  | leaf i => f i
  | node l r => sum f l + sum f r

/-- The floating-point evaluation: every node rounds the exact sum of its children's
computed values with `fl`; the leaves are the given terms. -/
@[expose] def eval [Add α] (fl : α → α) (f : ι → α) : STree ι → α
  | leaf i => f i
  | node l r => fl (eval fl f l + eval fl f r)

/-- The depth: the largest number of roundings on a path from a leaf to the root. -/
@[expose] def depth : STree ι → Nat
  | leaf _ => 0
  | node l r => max l.depth r.depth + 1

/-- The number of leaves. -/
@[expose] def size : STree ι → Nat
  | leaf _ => 1
  | node l r => l.size + r.size

/-- The depth is less than the number of leaves. -/
theorem depth_lt_size : ∀ t : STree ι, t.depth < t.size
  | leaf _ => by simp [depth, size]
  | node l r => by
    have hl := depth_lt_size l; have hr := depth_lt_size r
    simp only [depth, size]; omega

/-- Relabel the leaves. -/
@[expose] def map {κ : Type} (φ : ι → κ) : STree ι → STree κ
  | leaf i => leaf (φ i)
  | node l r => node (map φ l) (map φ r)

/-- Left-to-right summation of `Fin (n + 1)`: `(…((f 0 + f 1) + f 2) + …)`. -/
@[expose] def seq : (n : Nat) → STree (Fin (n + 1))
  | 0 => leaf 0
  | n + 1 => node ((seq n).map Fin.castSucc) (leaf (Fin.last (n + 1)))

section Field

variable [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α] [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- The tree adds every index of `Fin n` exactly once: its sum is `finSum`, for every
function into `α`. -/
@[expose] def IsOrder (α : Type u) [Field α] {n : Nat} (t : STree (Fin n)) : Prop :=
  ∀ g : Fin n → α, t.sum g = finSum g

/-- Sums over a tree are monotone. -/
theorem sum_le_sum {f g : ι → α} (h : ∀ i, f i ≤ g i) : ∀ t : STree ι, t.sum f ≤ t.sum g
  | leaf i => h i
  | node l r => by
    have := sum_le_sum h l; have := sum_le_sum h r
    simp only [sum]; grind

/-- Sums of nonnegative terms are nonnegative. -/
theorem sum_nonneg {f : ι → α} (h : ∀ i, 0 ≤ f i) : ∀ t : STree ι, 0 ≤ t.sum f
  | leaf i => h i
  | node l r => by
    have := sum_nonneg h l; have := sum_nonneg h r
    simp only [sum]; grind

/-- The triangle inequality over a tree. -/
theorem absv_sum_le {f M : ι → α} (h : ∀ i, absv (f i) ≤ M i) :
    ∀ t : STree ι, absv (t.sum f) ≤ t.sum M
  | leaf i => h i
  | node l r => by
    have := absv_sum_le h l; have := absv_sum_le h r
    have := absv_add_le (l.sum f) (r.sum f)
    simp only [sum]; grind

/-- The sum of ones counts the leaves. -/
theorem sum_one : ∀ t : STree ι, t.sum (fun _ => (1 : α)) = (t.size : α)
  | leaf _ => by simp only [sum, size]; grind
  | node l r => by
    simp only [sum, size]; rw [sum_one l, sum_one r]; grind

/-- Casts of natural numbers are injective in an ordered field. -/
theorem natCast_inj {m n : Nat} (h : (m : α) = (n : α)) : m = n := by
  rcases Nat.lt_trichotomy m n with hmn | hmn | hmn
  · obtain ⟨k, rfl⟩ := Nat.exists_eq_add_of_lt hmn
    have : (0 : α) ≤ (k : α) := OrderedRing.natCast_nonneg
    have e : ((m + k + 1 : Nat) : α) = (m : α) + (k : α) + 1 := by grind
    have := OrderedRing.zero_lt_one (R := α)
    rw [e] at h; grind
  · exact hmn
  · obtain ⟨k, rfl⟩ := Nat.exists_eq_add_of_lt hmn
    have : (0 : α) ≤ (k : α) := OrderedRing.natCast_nonneg
    have e : ((n + k + 1 : Nat) : α) = (n : α) + (k : α) + 1 := by grind
    have := OrderedRing.zero_lt_one (R := α)
    rw [e] at h; grind

/-- A summation order of `Fin n` has `n` leaves. -/
theorem IsOrder.size_eq {n : Nat} {t : STree (Fin n)} (ht : t.IsOrder α) : t.size = n := by
  have h := ht (fun _ => 1)
  rw [sum_one, finSum_const] at h
  exact natCast_inj (α := α) (by grind)

/-- A summation order of `Fin n` has depth at most `n − 1`. -/
theorem IsOrder.depth_le {n : Nat} {t : STree (Fin n)} (ht : t.IsOrder α) : t.depth + 1 ≤ n := by
  have := depth_lt_size t; have := ht.size_eq; omega

/-- Sums over a relabelled tree. -/
theorem sum_map {κ : Type} (φ : ι → κ) (g : κ → α) :
    ∀ t : STree ι, (t.map φ).sum g = t.sum (fun i => g (φ i))
  | leaf _ => rfl
  | node l r => by simp only [map, sum]; rw [sum_map φ g l, sum_map φ g r]

/-- Left-to-right summation is a summation order. -/
theorem seq_isOrder : ∀ n : Nat, (seq n).IsOrder α
  | 0 => fun g => by simp [seq, sum]
  | n + 1 => fun g => by
    simp only [seq, sum]
    rw [sum_map, seq_isOrder n (fun i => g i.castSucc), finSum_succ g]

/-- The sum of zeros is zero. -/
theorem sum_zero : ∀ t : STree ι, t.sum (fun _ => (0 : α)) = 0
  | leaf _ => rfl
  | node l r => by simp only [sum]; rw [sum_zero l, sum_zero r]; grind

/-- The general error bound of a floating-point sum with perturbed leaves: if
`|f i| ≤ M i` and each leaf `g i` is within `e · M i + η i` of `f i` (`η i ≥ 0`: an
absolute part, e.g. a product that underflowed), then for a tree of depth `d`
(`d u < 1`) the computed sum is within `((1 + γ_d)(1 + e) − 1) Σ M + (1 + γ_d) Σ η` of
`Σ f`. (The nodes carry no absolute term: an IEEE sum of two floating-point numbers
whose exact value is subnormal is exact.) -/
theorem absv_eval_sub_sum_le (R : Rounding α) {f g M η : ι → α} {e : α} (he : 0 ≤ e)
    (hη : ∀ i, 0 ≤ η i) (hM : ∀ i, absv (f i) ≤ M i)
    (hg : ∀ i, absv (g i - f i) ≤ e * M i + η i) :
    ∀ t : STree ι, ((t.depth : Nat) : α) * R.u < 1 →
      absv (t.eval R.fl g - t.sum f) ≤
        ((1 + gam R.u t.depth) * (1 + e) - 1) * t.sum M + (1 + gam R.u t.depth) * t.sum η
  | leaf i, _ => by
    simp only [eval, sum, depth]
    have : gam R.u 0 = 0 := by simp [gam]; grind
    rw [this]; have := hg i; grind
  | node l r, hd => by
    have hu := R.u_nonneg
    have hM0 : ∀ i, 0 ≤ M i := fun i => Std.le_trans (absv_nonneg _) (hM i)
    simp only [eval, sum, depth] at hd ⊢
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
    have ihl := absv_eval_sub_sum_le R he hη hM hg l (by rw [hdl]; exact hdl')
    have ihr := absv_eval_sub_sum_le R he hη hM hg r (by rw [hdr]; exact hdr')
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
    have Hl0 := sum_nonneg hη l
    have Hr0 := sum_nonneg hη r
    have hCl : (1 + gam R.u dl) * l.sum η ≤ (1 + gam R.u (max dl dr)) * l.sum η :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) Hl0
    have hCr : (1 + gam R.u dr) * r.sum η ≤ (1 + gam R.u (max dl dr)) * r.sum η :=
      OrderedRing.mul_le_mul_of_nonneg_right (by grind) Hr0
    generalize hK : (1 + gam R.u (max dl dr)) * (1 + e) = K at *
    generalize hC : 1 + gam R.u (max dl dr) = C at *
    have el : absv (l.eval R.fl g - l.sum f) ≤ (K - 1) * l.sum M + C * l.sum η := by
      have := OrderedRing.mul_le_mul_of_nonneg_right
        (by grind : (1 + gam R.u dl) * (1 + e) - 1 ≤ K - 1) Ml0
      grind
    have er : absv (r.eval R.fl g - r.sum f) ≤ (K - 1) * r.sum M + C * r.sum η := by
      have := OrderedRing.mul_le_mul_of_nonneg_right
        (by grind : (1 + gam R.u dr) * (1 + e) - 1 ≤ K - 1) Mr0
      grind
    have fl := absv_sum_le hM l
    have fr := absv_sum_le hM r
    have al : absv (l.eval R.fl g) ≤ K * l.sum M + C * l.sum η := by
      have := absv_add_le (l.eval R.fl g - l.sum f) (l.sum f)
      have e1 : l.eval R.fl g - l.sum f + l.sum f = l.eval R.fl g := by grind
      rw [e1] at this; grind
    have ar : absv (r.eval R.fl g) ≤ K * r.sum M + C * r.sum η := by
      have := absv_add_le (r.eval R.fl g - r.sum f) (r.sum f)
      have e1 : r.eval R.fl g - r.sum f + r.sum f = r.eval R.fl g := by grind
      rw [e1] at this; grind
    have hab := absv_add_le (l.eval R.fl g) (r.eval R.fl g)
    have hround := R.rel (l.eval R.fl g + r.eval R.fl g)
    have hround' : absv (R.fl (l.eval R.fl g + r.eval R.fl g) - (l.eval R.fl g + r.eval R.fl g))
        ≤ R.u * (K * (l.sum M + r.sum M) + C * (l.sum η + r.sum η)) := by
      have := OrderedRing.mul_le_mul_of_nonneg_left
        (by grind : absv (l.eval R.fl g + r.eval R.fl g) ≤
          K * (l.sum M + r.sum M) + C * (l.sum η + r.sum η)) hu
      grind
    -- (1 + u)(1 + γ_max) ≤ 1 + γ_{max+1}
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
    have tri := absv_add_le
      (R.fl (l.eval R.fl g + r.eval R.fl g) - (l.eval R.fl g + r.eval R.fl g))
      ((l.eval R.fl g - l.sum f) + (r.eval R.fl g - r.sum f))
    have tri2 := absv_add_le (l.eval R.fl g - l.sum f) (r.eval R.fl g - r.sum f)
    have hs := OrderedRing.mul_le_mul_of_nonneg_right hstep (by grind : 0 ≤ l.sum M + r.sum M)
    have hs2 := OrderedRing.mul_le_mul_of_nonneg_right h4 (by grind : 0 ≤ l.sum η + r.sum η)
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

/-- Any tree of depth `d`, exact leaves: `|ŝ − s| ≤ γ_d Σ |f|`. -/
theorem fp_summation_depth {ι : Type} (R : Rounding α) (f : ι → α) (t : STree ι)
    (hd : (t.depth : α) * R.u < 1) :
    absv (t.eval R.fl f - t.sum f) ≤ gam R.u t.depth * t.sum (fun i => absv (f i)) := by
  have := STree.absv_eval_sub_sum_le R (f := f) (g := f) (M := fun i => absv (f i))
    (η := fun _ => 0) (e := 0) (by grind) (fun _ => by grind) (fun i => by grind) (fun i => by
      have : f i - f i = 0 := by grind
      rw [this]; have := absv_nonneg (f i); unfold absv; split <;> grind) t hd
  rw [STree.sum_zero] at this
  grind

/-- The depth of a summation order of `n` terms is at most `n − 1`, so `γ_d ≤ γ_{n−1}`. -/
theorem gam_depth_le {n : Nat} {u : α} (hu : 0 ≤ u) {t : STree (Fin n)} (ht : t.IsOrder α)
    (hn : ((n - 1 : Nat) : α) * u < 1) : gam u t.depth ≤ gam u (n - 1) :=
  gam_mono hu (by have := ht.depth_le; omega) hn

/-- [fp_summation] Summation in any order: for every summation tree `t` that adds each of
the `n` terms once (any order and association: sequential, pairwise, blocked, SIMD
lanes), rounding every partial sum with unit round-off `u` (`(n − 1) u < 1`),
`|ŝ − Σᵢ fᵢ| ≤ γ_{n−1} Σᵢ |fᵢ|`. -/
theorem fp_summation {n : Nat} (R : Rounding α) (f : Fin n → α) (t : STree (Fin n))
    (ht : t.IsOrder α) (hn : ((n - 1 : Nat) : α) * R.u < 1) :
    absv (t.eval R.fl f - finSum f) ≤ gam R.u (n - 1) * finSum (fun i => absv (f i)) := by
  have hd : (t.depth : α) * R.u < 1 := by
    have := natCast_le_natCast (α := α) (by have := ht.depth_le; omega : t.depth ≤ n - 1)
    have := OrderedRing.mul_le_mul_of_nonneg_right this R.u_nonneg; grind
  have h := fp_summation_depth R f t hd
  rw [ht f, ht (fun i => absv (f i))] at h
  have g := gam_depth_le R.u_nonneg ht hn
  have := OrderedRing.mul_le_mul_of_nonneg_right g
    (finSum_nonneg (fun i => absv_nonneg (f i)))
  exact Std.le_trans h this

/-- [fp_summation] The perturbed-leaf bound for a summation order of `n` terms: leaves
within `e · M i + η i` of the terms (`|f i| ≤ M i`) give
`((1 + γ_{n−1})(1 + e) − 1) Σ M + (1 + γ_{n−1}) Σ η`. -/
theorem fp_summation_perturbed {n : Nat} (R : Rounding α) {f g M η : Fin n → α} {e : α}
    (he : 0 ≤ e) (hη : ∀ i, 0 ≤ η i) (hM : ∀ i, absv (f i) ≤ M i)
    (hg : ∀ i, absv (g i - f i) ≤ e * M i + η i)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn : ((n - 1 : Nat) : α) * R.u < 1) :
    absv (t.eval R.fl g - finSum f) ≤
      ((1 + gam R.u (n - 1)) * (1 + e) - 1) * finSum M + (1 + gam R.u (n - 1)) * finSum η := by
  have hd : (t.depth : α) * R.u < 1 := by
    have := natCast_le_natCast (α := α) (by have := ht.depth_le; omega : t.depth ≤ n - 1)
    have := OrderedRing.mul_le_mul_of_nonneg_right this R.u_nonneg; grind
  have h := STree.absv_eval_sub_sum_le R he hη hM hg t hd
  rw [ht f, ht M, ht η] at h
  have g := gam_depth_le R.u_nonneg ht hn
  have hM0 : 0 ≤ finSum M := finSum_nonneg fun i => Std.le_trans (absv_nonneg _) (hM i)
  have hH0 : 0 ≤ finSum η := finSum_nonneg hη
  have h1 := OrderedRing.mul_le_mul_of_nonneg_right
    (OrderedRing.mul_le_mul_of_nonneg_right (by grind : 1 + gam R.u t.depth ≤ 1 + gam R.u (n - 1))
      (by grind : (0 : α) ≤ 1 + e)) hM0
  have h2 := OrderedRing.mul_le_mul_of_nonneg_right
    (by grind : 1 + gam R.u t.depth ≤ 1 + gam R.u (n - 1)) hH0
  grind

/-- `(1 + γ_{n−1})(1 + u) ≤ 1 + γ_n`, for `n ≥ 1`. -/
theorem one_add_gam_pred_mul_le {n : Nat} {u : α} (hu : 0 ≤ u) (hn1 : 1 ≤ n)
    (hn : (n : α) * u < 1) : (1 + gam u (n - 1)) * (1 + u) ≤ 1 + gam u n := by
  have e : n - 1 + 1 = n := by omega
  have h := one_add_gam_mul_le (j := n - 1) (k := 1) hu (by rw [e]; exact hn)
  rw [e] at h
  have hpred : ((n - 1 : Nat) : α) * u < 1 := by
    have := natCast_le_natCast (α := α) (Nat.sub_le n 1)
    have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
  have h1 := one_add_le_one_add_gam_one hu (by
    have := natCast_le_natCast (α := α) hn1
    have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind)
  have := OrderedRing.mul_le_mul_of_nonneg_left h1
    (by have := gam_nonneg hu hpred; grind : (0 : α) ≤ 1 + gam u (n - 1))
  grind

/-- `(n − 1) u < 1` from `n u < 1`. -/
theorem pred_mul_lt {n : Nat} {u : α} (hu : 0 ≤ u) (hn : (n : α) * u < 1) :
    ((n - 1 : Nat) : α) * u < 1 := by
  have := natCast_le_natCast (α := α) (Nat.sub_le n 1)
  have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind

/-- [fp_dot_product] A dot product in any order: each leaf is the product `aᵢ bᵢ`
rounded (`|gᵢ − aᵢbᵢ| ≤ u |aᵢbᵢ| + ηᵢ`, `ηᵢ` the underflow of the product, `0` in the
normal range) or exact (it feeds a fused multiply-add), the leaves are added by any
summation order with unit round-off `u`, `n u < 1`:
`|â·b − a·b| ≤ γ_n Σᵢ |aᵢ| |bᵢ| + (1 + γ_{n−1}) Σᵢ ηᵢ`. -/
theorem fp_dot_product {n : Nat} (R : Rounding α) (a b g η : Fin n → α) (hη : ∀ i, 0 ≤ η i)
    (hg : ∀ i, absv (g i - a i * b i) ≤ R.u * absv (a i * b i) + η i) (t : STree (Fin n))
    (ht : t.IsOrder α) (hn1 : 1 ≤ n) (hn : (n : α) * R.u < 1) :
    absv (t.eval R.fl g - finSum (fun i => a i * b i)) ≤
      gam R.u n * finSum (fun i => absv (a i) * absv (b i)) +
        (1 + gam R.u (n - 1)) * finSum η := by
  have hu := R.u_nonneg
  have hpred := pred_mul_lt hu hn
  have h := fp_summation_perturbed R (f := fun i => a i * b i) (M := fun i => absv (a i * b i))
    hu hη (fun i => by grind) hg t ht hpred
  have hm : (fun i => absv (a i * b i)) = fun i => absv (a i) * absv (b i) :=
    funext fun i => absv_mul _ _
  rw [hm] at h
  have hM0 : 0 ≤ finSum (fun i => absv (a i) * absv (b i)) :=
    finSum_nonneg fun i => OrderedRing.mul_nonneg (absv_nonneg _) (absv_nonneg _)
  have := OrderedRing.mul_le_mul_of_nonneg_right
    (by have := one_add_gam_pred_mul_le hu hn1 hn; grind :
      (1 + gam R.u (n - 1)) * (1 + R.u) - 1 ≤ gam R.u n) hM0
  grind

/-- [fp_matmul] A matrix product, every entry a dot product in its own order (a kernel
may block, split and reorder each entry differently): for `A : m × n`, `B : n × p`,
leaves `g i k j` within `u |A i j B j k| + η i k j` of `A i j * B j k` (or exact: FMA),
trees `T i k` each adding every `j` once, `n u < 1`:
`|Ĉ i k − (A B) i k| ≤ γ_n (|A| |B|) i k + (1 + γ_{n−1}) Σ_j η i k j`. -/
theorem fp_matmul {m n p : Nat} (R : Rounding α) (A : Mat α m n) (B : Mat α n p)
    (g η : Fin m → Fin p → Fin n → α) (hη : ∀ i k j, 0 ≤ η i k j)
    (hg : ∀ i k j, absv (g i k j - A i j * B j k) ≤ R.u * absv (A i j * B j k) + η i k j)
    (T : Fin m → Fin p → STree (Fin n)) (hT : ∀ i k, (T i k).IsOrder α)
    (hn1 : 1 ≤ n) (hn : (n : α) * R.u < 1) (i : Fin m) (k : Fin p) :
    absv ((T i k).eval R.fl (g i k) - (A ⬝ B) i k) ≤
      gam R.u n * ((fun i j => absv (A i j)) ⬝ (fun j k => absv (B j k))) i k +
        (1 + gam R.u (n - 1)) * finSum (η i k) := by
  simp only [Mat.mul_apply]
  exact fp_dot_product R (fun j => A i j) (fun j => B j k) (g i k) (η i k) (hη i k) (hg i k)
    (T i k) (hT i k) hn1 hn

/-- Relative perturbations of both factors of a product: `|â − a| ≤ u_a |a|`,
`|b̂ − b| ≤ u_b |b|` give `|â b̂ − a b| ≤ ((1 + u_a)(1 + u_b) − 1)|a b|`. -/
theorem absv_mul_sub_mul_le {a b a' b' ua ub : α} (hua : 0 ≤ ua)
    (ha : absv (a' - a) ≤ ua * absv a) (hb : absv (b' - b) ≤ ub * absv b) :
    absv (a' * b' - a * b) ≤ ((1 + ua) * (1 + ub) - 1) * absv (a * b) := by
  have e : a' * b' - a * b = (a' - a) * b + a * (b' - b) + (a' - a) * (b' - b) := by grind
  rw [e, absv_mul a b]
  have t1 := absv_add_le ((a' - a) * b + a * (b' - b)) ((a' - a) * (b' - b))
  have t2 := absv_add_le ((a' - a) * b) (a * (b' - b))
  have m1 := absv_mul (a' - a) b
  have m2 := absv_mul a (b' - b)
  have m3 := absv_mul (a' - a) (b' - b)
  have p1 := OrderedRing.mul_le_mul_of_nonneg_right ha (absv_nonneg b)
  have p2 := OrderedRing.mul_le_mul_of_nonneg_left hb (absv_nonneg a)
  have p3 := mul_le_mul_of_le_of_le ha hb
    (OrderedRing.mul_nonneg hua (absv_nonneg a)) (absv_nonneg _)
  grind

/-- [fp_mixed_precision] Mixed precision, as bfloat16/float16 kernels with float32
accumulation compute: the inputs are the exact `a`, `b` rounded (`|âᵢ − aᵢ| ≤ u_a |aᵢ|`,
`|b̂ᵢ − bᵢ| ≤ u_b |bᵢ|`: the rounding to the storage format, in its normal range), the
products rounded at `u_acc` with underflow `ηᵢ` or exact (a bfloat16 or float16
product is exact in float32), any summation order at `u_acc`, and the result rounded
once more (`|ŷ − s| ≤ u_out |s| + η_out`; `u_out = η_out = 0` when the result stays in
the accumulator):
`|ŷ − Σ aᵢbᵢ| ≤ ((1 + u_out)(1 + u_a)(1 + u_b)(1 + γ_n(u_acc)) − 1) Σ |aᵢ| |bᵢ|
+ (1 + u_out)(1 + γ_{n−1}(u_acc)) Σ ηᵢ + η_out`. -/
theorem fp_mixed_precision {n : Nat} (Racc : Rounding α) {ua ub uout ηout : α}
    (hua : 0 ≤ ua) (hub : 0 ≤ ub) (huo : 0 ≤ uout) (a b a' b' g η : Fin n → α)
    (hη : ∀ i, 0 ≤ η i)
    (ha : ∀ i, absv (a' i - a i) ≤ ua * absv (a i))
    (hb : ∀ i, absv (b' i - b i) ≤ ub * absv (b i))
    (hg : ∀ i, absv (g i - a' i * b' i) ≤ Racc.u * absv (a' i * b' i) + η i)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn1 : 1 ≤ n) (hn : (n : α) * Racc.u < 1)
    (y : α) (hy : absv (y - t.eval Racc.fl g) ≤ uout * absv (t.eval Racc.fl g) + ηout) :
    absv (y - finSum (fun i => a i * b i)) ≤
      ((1 + uout) * (1 + ua) * (1 + ub) * (1 + gam Racc.u n) - 1) *
        finSum (fun i => absv (a i) * absv (b i)) +
      (1 + uout) * (1 + gam Racc.u (n - 1)) * finSum η + ηout := by
  have hu := Racc.u_nonneg
  have hpred := pred_mul_lt hu hn
  have huv : 0 ≤ ua + ub + ua * ub := by have := OrderedRing.mul_nonneg hua hub; grind
  -- each leaf is within (c − 1)|a b| + η of the exact product, c = (1 + u_acc)(1 + u_a)(1 + u_b)
  have leaf : ∀ i, absv (g i - a i * b i) ≤
      ((1 + Racc.u) * ((1 + ua) * (1 + ub)) - 1) * absv (a i * b i) + η i := fun i => by
    have h1 := absv_mul_sub_mul_le hua (ha i) (hb i)
    have h2 : absv (a' i * b' i) ≤ (1 + ua) * (1 + ub) * absv (a i * b i) := by
      have := absv_add_le (a' i * b' i - a i * b i) (a i * b i)
      have e : a' i * b' i - a i * b i + a i * b i = a' i * b' i := by grind
      rw [e] at this; grind
    have h3 := OrderedRing.mul_le_mul_of_nonneg_left h2 hu
    have := absv_add_le (g i - a' i * b' i) (a' i * b' i - a i * b i)
    have e : g i - a' i * b' i + (a' i * b' i - a i * b i) = g i - a i * b i := by grind
    rw [e] at this; have := hg i; grind
  have he : 0 ≤ (1 + Racc.u) * ((1 + ua) * (1 + ub)) - 1 := by
    have := OrderedRing.mul_nonneg hu huv
    have := OrderedRing.mul_nonneg hua hub; grind
  have hs := fp_summation_perturbed Racc (f := fun i => a i * b i)
    (M := fun i => absv (a i * b i)) he hη (fun i => by grind) leaf t ht hpred
  have hm : (fun i => absv (a i * b i)) = fun i => absv (a i) * absv (b i) :=
    funext fun i => absv_mul _ _
  rw [hm] at hs
  generalize hS : finSum (fun i => a i * b i) = S at *
  generalize hA : finSum (fun i => absv (a i) * absv (b i)) = A at *
  have hA0 : 0 ≤ A := by
    rw [← hA]; exact finSum_nonneg fun i => OrderedRing.mul_nonneg (absv_nonneg _) (absv_nonneg _)
  generalize hH : finSum η = H at *
  have hH0 : 0 ≤ H := by rw [← hH]; exact finSum_nonneg hη
  generalize hE : t.eval Racc.fl g = E at *
  have hg1 := one_add_gam_pred_mul_le hu hn1 hn
  have g0 := gam_nonneg hu hpred
  have huv1 : (0 : α) ≤ (1 + ua) * (1 + ub) := OrderedRing.mul_nonneg (by grind) (by grind)
  have hK : (1 + gam Racc.u (n - 1)) * ((1 + Racc.u) * ((1 + ua) * (1 + ub))) ≤
      (1 + gam Racc.u n) * ((1 + ua) * (1 + ub)) := by
    have := OrderedRing.mul_le_mul_of_nonneg_right hg1 huv1; grind
  generalize hKd : (1 + gam Racc.u n) * ((1 + ua) * (1 + ub)) = K at *
  generalize hC : 1 + gam Racc.u (n - 1) = C at *
  have hE1 : absv (E - S) ≤ (K - 1) * A + C * H := by
    have := OrderedRing.mul_le_mul_of_nonneg_right
      (by grind : C * ((1 + Racc.u) * ((1 + ua) * (1 + ub))) - 1 ≤ K - 1) hA0
    grind
  have hE2 : absv E ≤ K * A + C * H := by
    have := absv_add_le (E - S) S
    have e : E - S + S = E := by grind
    rw [e] at this
    have := absv_finSum_le (fun i => a i * b i)
    rw [hS, hm, hA] at this; grind
  have hyE := OrderedRing.mul_le_mul_of_nonneg_left hE2 huo
  have tri := absv_add_le (y - E) (E - S)
  have e : y - E + (E - S) = y - S := by grind
  rw [e] at tri
  have fin : (1 + uout) * (1 + ua) * (1 + ub) * (1 + gam Racc.u n) = (1 + uout) * K := by
    rw [← hKd]; grind
  rw [fin]; grind

/-- [fp_mixed_precision] The matrix form: inputs `Â`, `B̂` rounded from `A`, `B` at
`u_a`, `u_b`, products (underflow `η`) and any per-entry summation order at `u_acc`,
the entries rounded at `u_out` (underflow `η_out`):
`|Ŷ i k − (A B) i k| ≤ ((1 + u_out)(1 + u_a)(1 + u_b)(1 + γ_n(u_acc)) − 1) (|A| |B|) i k
+ (1 + u_out)(1 + γ_{n−1}) Σ_j η i k j + η_out`. -/
theorem fp_mixed_precision_matmul {m n p : Nat} (Racc : Rounding α) {ua ub uout ηout : α}
    (hua : 0 ≤ ua) (hub : 0 ≤ ub) (huo : 0 ≤ uout) (A A' : Mat α m n) (B B' : Mat α n p)
    (hA : ∀ i j, absv (A' i j - A i j) ≤ ua * absv (A i j))
    (hB : ∀ j k, absv (B' j k - B j k) ≤ ub * absv (B j k))
    (g η : Fin m → Fin p → Fin n → α) (hη : ∀ i k j, 0 ≤ η i k j)
    (hg : ∀ i k j, absv (g i k j - A' i j * B' j k) ≤
      Racc.u * absv (A' i j * B' j k) + η i k j)
    (T : Fin m → Fin p → STree (Fin n)) (hT : ∀ i k, (T i k).IsOrder α)
    (hn1 : 1 ≤ n) (hn : (n : α) * Racc.u < 1) (Y : Mat α m p)
    (hY : ∀ i k, absv (Y i k - (T i k).eval Racc.fl (g i k)) ≤
      uout * absv ((T i k).eval Racc.fl (g i k)) + ηout) (i : Fin m) (k : Fin p) :
    absv (Y i k - (A ⬝ B) i k) ≤
      ((1 + uout) * (1 + ua) * (1 + ub) * (1 + gam Racc.u n) - 1) *
        ((fun i j => absv (A i j)) ⬝ (fun j k => absv (B j k))) i k +
      (1 + uout) * (1 + gam Racc.u (n - 1)) * finSum (η i k) + ηout := by
  simp only [Mat.mul_apply]
  exact fp_mixed_precision Racc hua hub huo (fun j => A i j) (fun j => B j k)
    (fun j => A' i j) (fun j => B' j k) (g i k) (η i k) (hη i k) (fun j => hA i j)
    (fun j => hB j k) (hg i k) (T i k) (hT i k) hn1 hn (Y i k) (hY i k)

end Bounds

end Pldr

end
