module

public import Pldr.Rope

/-!
# The commutant of RoPE  (`[rope_commutant_char]`)

Paper: a collapsed metric `G*` can be folded into the query projection *before* RoPE
only if it commutes with the rotations. This file characterises exactly which matrices
do.

* One plane (`rope_commutant_char_plane`): a `2 × 2` matrix `M` commutes with `rot(c, s)`,
  `s ≠ 0`, iff `M = x I + y J` with `J` the quarter turn (`spanIJ x y`).
* Two different planes (`rope_commutant_char_offdiag`): if `rot(u) X = X rot(v)` and
  `u.c ≠ v.c` (the two rotations have no common eigenvalue `e^{±iθ}`; for unit pairs
  this is the same as *not* `c = c' ∧ s = ±s'`), then `X = 0`. Needs `2 ≠ 0`.
* The full block-diagonal operator (`rope_commutant_char`): if every plane has `s_p ≠ 0`
  and the planes have pairwise distinct cosines, a `2k × 2k` matrix commutes with
  `R = blockDiag (rot u_p)` iff it is block diagonal with every block in `span{I, J}`.
* Dimension count (`rope_commutant_char_dim`): the commutant is the image of the
  parametrisation `(x, y) ↦ blockDiag (x_p I + y_p J)` by `2k = dk` scalars, which is
  injective and linear; all matrices need `dk²` scalars. So the commutant has dimension
  `dk` inside `dk²` (codimension `dk² - dk`).
* Positions (`rope_commutant_char_positions`): commuting with all `R_n` is the same as
  commuting with `R_1` (`R_n = R_1ⁿ`), so the same characterisation holds for the
  commutant of the whole RoPE family.

For the real RoPE (`θ_p = 10000^{-2p/dk} ∈ (0, 1]`, pairwise distinct), `sin θ_p ≠ 0` and
`cos θ_p` are pairwise distinct because `cos` is injective on `[0, π]`; that fact about
real cosines is not formalised here (no reals in core Lean). A rational instance of all
hypotheses is `rope_commutant_char_rat_example`.

There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α]

/-- `x I + y J = [[x, -y], [y, x]]`: the matrices of multiplication by the complex number
`x + iy`. -/
@[expose] def spanIJ (x y : α) : Mat α 2 2 := Mat.of2 x (-y) y x

/-- `spanIJ x y` is indeed `x • I + y • J`. -/
theorem spanIJ_eq (x y : α) : spanIJ x y = x • (1 : Mat α 2 2) + y • (quarterTurn : Mat α 2 2) := by
  rw [Mat.one_eq_of2]
  apply Mat.ext; intro i j
  have hi : i = 0 ∨ i = 1 := by revert i; decide
  have hj : j = 0 ∨ j = 1 := by revert j; decide
  rcases hi with rfl | rfl <;> rcases hj with rfl | rfl <;>
    simp [spanIJ, quarterTurn, Mat.of2] <;> grind

/-- [rope_commutant_char] One plane: `M` commutes with `rot(c, s)`, `s ≠ 0`, iff
`M = x I + y J`. -/
theorem rope_commutant_char_plane (u : UnitPair α) (hs : u.s ≠ 0) (M : Mat α 2 2) :
    M ⬝ rot u = rot u ⬝ M ↔ ∃ x y, M = spanIJ x y := by
  constructor
  · intro h
    rw [Mat.eq_of2 M] at h ⊢
    simp only [rot, Mat.of2_mul_of2] at h
    obtain ⟨h1, h2, h3, h4⟩ := Mat.of2_eq_of2.mp h
    refine ⟨M 0 0, M 1 0, Mat.of2_eq_of2.mpr ⟨rfl, ?_, rfl, ?_⟩⟩
    · have : u.s * (M 0 1 + M 1 0) = 0 := by grind
      grind
    · have : u.s * (M 1 1 - M 0 0) = 0 := by grind
      grind
  · rintro ⟨x, y, rfl⟩
    simp only [rot, spanIJ, Mat.of2_mul_of2]
    exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- In a field, `a ≠ 0` and `a * b = 0` force `b = 0`. -/
theorem eq_zero_of_mul_eq_zero_left' {a b : α} (ha : a ≠ 0) (h : a * b = 0) : b = 0 := by
  grind

/-- In a field, `a * a = 0` forces `a = 0`. -/
theorem eq_zero_of_mul_self_eq_zero' {a : α} (h : a * a = 0) : a = 0 := by
  by_cases ha : a = 0
  · exact ha
  · exact absurd (eq_zero_of_mul_eq_zero_left' ha h) ha

/-- `2 ≠ 0` implies `4 ≠ 0`. -/
theorem four_ne_zero' (h2 : (2 : α) ≠ 0) : (4 : α) ≠ 0 := by
  intro h4
  have : (2 : α) * 2 = 0 := by grind
  exact h2 (eq_zero_of_mul_eq_zero_left' h2 this)

/-- For unit pairs, `((c-c')² + (s-s')²) ((c-c')² + (s+s')²) = 4 (c-c')²`. -/
theorem unitPair_gap (u v : UnitPair α) :
    ((u.c - v.c) * (u.c - v.c) + (u.s - v.s) * (u.s - v.s)) *
      ((u.c - v.c) * (u.c - v.c) + (u.s + v.s) * (u.s + v.s)) =
      4 * ((u.c - v.c) * (u.c - v.c)) := by
  have n1 := u.norm; have n2 := v.norm
  have cert : ((u.c - v.c) * (u.c - v.c) + (u.s - v.s) * (u.s - v.s)) *
      ((u.c - v.c) * (u.c - v.c) + (u.s + v.s) * (u.s + v.s)) -
      4 * ((u.c - v.c) * (u.c - v.c)) =
      (u.c * u.c - 4 * u.c * v.c + 6 * v.c * v.c + u.s * u.s + 2 * v.s * v.s - 3) *
        (u.c * u.c + u.s * u.s - 1) +
      (-4 * u.c * v.c + v.c * v.c - 4 * u.s * u.s + v.s * v.s + 3) *
        (v.c * v.c + v.s * v.s - 1) := by grind
  rw [n1, n2] at cert
  grind

/-- [rope_commutant_char] Two planes whose rotations share no eigenvalue (`c ≠ c'`):
the only `X` with `rot(u) X = X rot(v)` is `0`. -/
theorem rope_commutant_char_offdiag (u v : UnitPair α) (hc : u.c ≠ v.c) (h2 : (2 : α) ≠ 0)
    (X : Mat α 2 2) (h : rot u ⬝ X = X ⬝ rot v) : X = 0 := by
  rw [Mat.eq_of2 X] at h ⊢
  simp only [rot, Mat.of2_mul_of2] at h
  obtain ⟨h1, h2', h3, h4⟩ := Mat.of2_eq_of2.mp h
  have gap := unitPair_gap u v
  have hsq : (u.c - v.c) * (u.c - v.c) = 0 → False := fun h0 =>
    hc (by have := eq_zero_of_mul_self_eq_zero' h0; grind)
  have hD1 : (u.c - v.c) * (u.c - v.c) + (u.s - v.s) * (u.s - v.s) ≠ 0 := by
    intro h0; rw [h0] at gap
    have h4sq : 4 * ((u.c - v.c) * (u.c - v.c)) = 0 := by grind
    exact hsq (eq_zero_of_mul_eq_zero_left' (four_ne_zero' h2) h4sq)
  have hD2 : (u.c - v.c) * (u.c - v.c) + (u.s + v.s) * (u.s + v.s) ≠ 0 := by
    intro h0; rw [h0] at gap
    have h4sq : 4 * ((u.c - v.c) * (u.c - v.c)) = 0 := by grind
    exact hsq (eq_zero_of_mul_eq_zero_left' (four_ne_zero' h2) h4sq)
  have k1 := congrArg (fun t => (u.c - v.c) * t) h1
  have k2 := congrArg (fun t => (v.s - u.s) * t) h2'
  have k3 := congrArg (fun t => (u.s - v.s) * t) h3
  have k4 := congrArg (fun t => (u.c - v.c) * t) h4
  have kx : ((u.c - v.c) * (u.c - v.c) + (u.s - v.s) * (u.s - v.s)) * (X 0 0 + X 1 1) = 0 := by
    simp only at k1 k2 k3 k4; grind
  have l1 := congrArg (fun t => (v.s - u.s) * t) h1
  have l2 := congrArg (fun t => (v.c - u.c) * t) h2'
  have l3 := congrArg (fun t => (u.c - v.c) * t) h3
  have l4 := congrArg (fun t => (v.s - u.s) * t) h4
  have ky : ((u.c - v.c) * (u.c - v.c) + (u.s - v.s) * (u.s - v.s)) * (X 1 0 - X 0 1) = 0 := by
    simp only at l1 l2 l3 l4; grind
  have m1 := congrArg (fun t => (u.c - v.c) * t) h1
  have m2 := congrArg (fun t => (u.s + v.s) * t) h2'
  have m3 := congrArg (fun t => (u.s + v.s) * t) h3
  have m4 := congrArg (fun t => (v.c - u.c) * t) h4
  have kz : ((u.c - v.c) * (u.c - v.c) + (u.s + v.s) * (u.s + v.s)) * (X 0 0 - X 1 1) = 0 := by
    simp only at m1 m2 m3 m4; grind
  have n1 := congrArg (fun t => (-u.s - v.s) * t) h1
  have n2 := congrArg (fun t => (u.c - v.c) * t) h2'
  have n3 := congrArg (fun t => (u.c - v.c) * t) h3
  have n4 := congrArg (fun t => (u.s + v.s) * t) h4
  have kw : ((u.c - v.c) * (u.c - v.c) + (u.s + v.s) * (u.s + v.s)) * (X 0 1 + X 1 0) = 0 := by
    simp only at n1 n2 n3 n4; grind
  have ex : X 0 0 + X 1 1 = 0 := by grind
  have ey : X 1 0 - X 0 1 = 0 := by grind
  have ez : X 0 0 - X 1 1 = 0 := by grind
  have ew : X 0 1 + X 1 0 = 0 := by grind
  rw [Mat.zero_eq_of2]
  exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- [rope_commutant_char] The full block-diagonal RoPE operator: if every plane rotation
has `s_p ≠ 0` and the plane cosines are pairwise distinct, a `2k × 2k` matrix `M`
commutes with `R = blockDiag (rot u_p)` iff `M` is block diagonal with every block in
`span{I, J}`. -/
theorem rope_commutant_char {k : Nat} (u : Fin k → UnitPair α) (hs : ∀ p, (u p).s ≠ 0)
    (hc : ∀ p p', p ≠ p' → (u p).c ≠ (u p').c) (h2 : (2 : α) ≠ 0)
    (M : Mat α (2 * k) (2 * k)) :
    M ⬝ blockDiag (fun p => rot (u p)) = blockDiag (fun p => rot (u p)) ⬝ M ↔
      ∃ x y : Fin k → α, M = blockDiag (fun p => spanIJ (x p) (y p)) := by
  constructor
  · intro h
    have hb : ∀ p p', block M p p' ⬝ rot (u p') = rot (u p) ⬝ block M p p' := fun p p' => by
      rw [← block_mul_blockDiag M (fun p => rot (u p)), h, block_blockDiag_mul]
    have hdiag : ∀ p, ∃ x y, block M p p = spanIJ x y := fun p =>
      (rope_commutant_char_plane (u p) (hs p) _).mp (hb p p)
    refine ⟨fun p => block M p p 0 0, fun p => block M p p 1 0, ext_planes fun p p' b b' => ?_⟩
    rw [blockDiag_planeIdx]
    by_cases hp : p = p'
    · subst hp
      obtain ⟨x, y, hxy⟩ := hdiag p
      simp only [if_true]
      show block M p p b b' = _
      rw [hxy]
      simp [spanIJ, Mat.of2]
    · simp only [hp, if_false]
      have hz := rope_commutant_char_offdiag (u p) (u p') (hc p p' hp) h2 (block M p p')
        (hb p p').symm
      show block M p p' b b' = 0
      rw [hz]; rfl
  · rintro ⟨x, y, rfl⟩
    rw [blockDiag_mul_blockDiag, blockDiag_mul_blockDiag]
    congr 1; funext p
    exact ((rope_commutant_char_plane (u p) (hs p) _).mpr ⟨x p, y p, rfl⟩)

/-- [rope_commutant_char] Commuting with every RoPE operator `R_n` is the same as being
block diagonal with blocks in `span{I, J}` (under the same hypotheses). -/
theorem rope_commutant_char_positions {k : Nat} (u : Fin k → UnitPair α)
    (hs : ∀ p, (u p).s ≠ 0) (hc : ∀ p p', p ≠ p' → (u p).c ≠ (u p').c) (h2 : (2 : α) ≠ 0)
    (G : Mat α (2 * k) (2 * k)) :
    (∀ n, G ⬝ ropeR u n = ropeR u n ⬝ G) ↔
      ∃ x y : Fin k → α, G = blockDiag (fun p => spanIJ (x p) (y p)) := by
  obtain ⟨hmul, h0, _, _⟩ := rope_group u
  constructor
  · intro h
    have h1 := h 1
    rw [rope_group_one] at h1
    exact (rope_commutant_char u hs hc h2 G).mp h1
  · intro hG
    have h1 := (rope_commutant_char u hs hc h2 G).mpr hG
    rw [← rope_group_one] at h1
    exact commute_all_of_commute_one hmul h0 h1

/-- [rope_commutant_char] Dimension count: the parametrisation
`(x, y) ↦ blockDiag (x_p I + y_p J)` of the commutant by `2k = dk` scalars is injective
(and it is linear, being entrywise linear), so the commutant has dimension `dk`, against
`dk²` for all `dk × dk` matrices. -/
theorem rope_commutant_char_dim {k : Nat} (x y x' y' : Fin k → α)
    (h : blockDiag (fun p => spanIJ (x p) (y p)) = blockDiag (fun p => spanIJ (x' p) (y' p))) :
    x = x' ∧ y = y' := by
  constructor
  · funext p
    have := congrFun (congrFun h (planeIdx p 0)) (planeIdx p 0)
    simpa [blockDiag_planeIdx, spanIJ, Mat.of2] using this
  · funext p
    have := congrFun (congrFun h (planeIdx p 1)) (planeIdx p 0)
    simpa [blockDiag_planeIdx, spanIJ, Mat.of2] using this

/-- [rope_commutant_char] The parametrisation of the commutant is additive. -/
theorem rope_commutant_char_dim_add {k : Nat} (x y x' y' : Fin k → α) :
    blockDiag (fun p => spanIJ (x p + x' p) (y p + y' p)) =
      blockDiag (fun p => spanIJ (x p) (y p)) + blockDiag (fun p => spanIJ (x' p) (y' p)) :=
  ext_planes fun p p' b b' => by
    simp only [Mat.add_apply, blockDiag_planeIdx]
    by_cases hp : p = p'
    · subst hp
      have hb : b = 0 ∨ b = 1 := by revert b; decide
      have hb' : b' = 0 ∨ b' = 1 := by revert b'; decide
      rcases hb with rfl | rfl <;> rcases hb' with rfl | rfl <;>
        simp [spanIJ, Mat.of2] <;> grind
    · simp [hp]; grind

/-! ### A rational instance of the hypotheses -/

/-- The unit pair `(3/5, 4/5)`. -/
@[expose] def up345 : UnitPair Rat := ⟨3 / 5, 4 / 5, by decide +kernel⟩

/-- The unit pair `(5/13, 12/13)`. -/
@[expose] def up51213 : UnitPair Rat := ⟨5 / 13, 12 / 13, by decide +kernel⟩

/-- Two planes (`dk = 4`) with rational rotations `(3/5, 4/5)` and `(5/13, 12/13)`. -/
@[expose] def ropeExample : Fin 2 → UnitPair Rat := fun p => if p.val = 0 then up345 else up51213

/-- [rope_commutant_char] The hypotheses of `rope_commutant_char` are satisfiable: the
rational two-plane example has nonzero sines, distinct cosines, and `2 ≠ 0`. -/
theorem rope_commutant_char_rat_example :
    (∀ p, (ropeExample p).s ≠ 0) ∧ (∀ p p', p ≠ p' → (ropeExample p).c ≠ (ropeExample p').c) ∧
      (2 : Rat) ≠ 0 := by
  decide +kernel

end Pldr

end
