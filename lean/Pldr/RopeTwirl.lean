module

public import Pldr.RopeCommutant

/-!
# The rotary twirl  (`[rope_twirl]`)

Paper (Lem. 5.9): averaging a matrix over the RoPE rotations,
`T_S(M) = (1/S) Σ_{n<S} R_n M R_nᵀ`, keeps the commutant part of `M` and damps every
other frequency component by the geometric average `(1/S) Σ_{n<S} wⁿ` of a unit complex
number `w`, with `(1 - w) Σ_{n<S} wⁿ = 1 - w^S`; so the twirl projects onto the
commutant as `S` grows (for `w ≠ 1`).

Exact finite-`S` identity, per `2 × 2` block `(p, p')` (planes of adjacent coordinates).
Every `2 × 2` block splits as `X₊ + X₋` with `X₊ = spanIJ x y = xI + yJ` (the part that
commutes with rotations) and `X₋ = conjIJ x' y' = [[x', y'], [y', -x']]` (the part that
anti-commutes: `rot(u) X₋ = X₋ rot(ū)`), `blockSplit`. Then

`block(Σ_{n<S} R_n M R_nᵀ)_{pp'} = G(w₊, S) X₊ + G(w₋, S) X₋`

with `w₊ = u_p ū_{p'}` (frequency difference), `w₋ = u_p u_{p'}` (frequency sum), and
`G(w, S) = Σ_{n<S} rot(wⁿ)` the geometric sum written as the `2 × 2` matrix of a complex
number (`geomRe`, `geomIm`). On a diagonal block `w₊ = 1`, so `G(w₊, S) = S · I`: the
commutant part is kept exactly (`rope_twirl_diag`). A matrix that commutes with every
`R_n` is fixed: `Σ_{n<S} R_n M R_nᵀ = S · M` (`rope_twirl_commutant`). The geometric sum
satisfies `(1 - w) G(w, S) = 1 - w^S` as complex numbers (`rope_twirl_geom`).

Abstracted: angles are unit pairs (as in `Pldr.Rope`); the division by `S` is left to
the reader (sums, not averages, are stated, so no characteristic assumption is needed).
The decay bound `|Σ wⁿ| ≤ 1/|sin(ω/2)|` needs real analysis and is not formalised.
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

attribute [local instance] Lean.Grind.Semiring.natCast

/-! ### Unit-pair algebra -/

namespace UnitPair

/-- Angle addition is commutative. -/
theorem mul_comm' (u v : UnitPair α) : mul u v = mul v u :=
  ext (by simp only [mul]; grind) (by simp only [mul]; grind)

/-- `(uv)ⁿ = uⁿ vⁿ`. -/
theorem mul_pow' (u v : UnitPair α) : ∀ n, pow (mul u v) n = mul (pow u n) (pow v n)
  | 0 => ext (by simp only [pow, mul, one]; grind) (by simp only [pow, mul, one]; grind)
  | n + 1 => by
    show mul (pow (mul u v) n) (mul u v) = mul (mul (pow u n) u) (mul (pow v n) v)
    rw [mul_pow' u v n]
    exact ext (by simp only [mul]; grind) (by simp only [mul]; grind)

/-- `conj (uⁿ) = (conj u)ⁿ`. -/
theorem conj_pow' (u : UnitPair α) : ∀ n, conj (pow u n) = pow (conj u) n
  | 0 => ext (by simp only [pow, conj, one]) (by simp only [pow, conj, one]; grind)
  | n + 1 => by
    show conj (mul (pow u n) u) = mul (pow (conj u) n) (conj u)
    rw [← conj_pow' u n]
    exact ext (by simp only [mul, conj]; grind) (by simp only [mul, conj]; grind)

/-- `1ⁿ = 1`. -/
theorem one_pow' : ∀ n, pow (one : UnitPair α) n = one
  | 0 => rfl
  | n + 1 => by
    show mul (pow one n) one = one
    rw [one_pow' n, mul_one]

/-- `u ū = 1`. -/
theorem mul_conj' (u : UnitPair α) : mul u (conj u) = one := by
  rw [mul_comm']; exact conj_mul u

end UnitPair

/-! ### The two parts of a `2 × 2` block -/

/-- The anti-commuting part `[[x, y], [y, -x]]` (reflections). -/
@[expose] def conjIJ (x y : α) : Mat α 2 2 := Mat.of2 x y y (-x)

/-- `rot u = spanIJ c s`: a rotation is multiplication by the complex number `c + is`. -/
theorem rot_eq_spanIJ (u : UnitPair α) : rot u = spanIJ u.c u.s := rfl

/-- Sum of two explicit `2 × 2` matrices. -/
theorem add_of2 (a b c d a' b' c' d' : α) :
    Mat.of2 a b c d + Mat.of2 a' b' c' d' = Mat.of2 (a + a') (b + b') (c + c') (d + d') := by
  apply Mat.ext; intro i j
  simp only [Mat.add_apply, Mat.of2]
  by_cases hi : i = 0 <;> by_cases hj : j = 0 <;> simp [hi, hj]

/-- Every `2 × 2` matrix splits into a commuting and an anti-commuting part (`2 ≠ 0`). -/
theorem blockSplit (h2 : (2 : α) ≠ 0) (X : Mat α 2 2) :
    X = spanIJ ((X 0 0 + X 1 1) / 2) ((X 1 0 - X 0 1) / 2) +
      conjIJ ((X 0 0 - X 1 1) / 2) ((X 0 1 + X 1 0) / 2) := by
  have hi : (2 : α) * 2⁻¹ = 1 := Field.mul_inv_cancel h2
  refine (Mat.eq_of2 X).trans ?_
  simp only [spanIJ, conjIJ, add_of2, Field.div_eq_mul_inv]
  exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- Conjugating the commuting part: `rot(a) X₊ rot(b)ᵀ = rot(a b̄) X₊`. -/
theorem rot_spanIJ_rot (a b : UnitPair α) (x y : α) :
    rot a ⬝ spanIJ x y ⬝ (rot b)ᵀ = rot (a.mul b.conj) ⬝ spanIJ x y := by
  simp only [rot, spanIJ, Mat.of2_mul_of2, Mat.transpose_of2, UnitPair.mul, UnitPair.conj]
  exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- Conjugating the anti-commuting part: `rot(a) X₋ rot(b)ᵀ = rot(a b) X₋`. -/
theorem rot_conjIJ_rot (a b : UnitPair α) (x y : α) :
    rot a ⬝ conjIJ x y ⬝ (rot b)ᵀ = rot (a.mul b) ⬝ conjIJ x y := by
  simp only [rot, conjIJ, Mat.of2_mul_of2, Mat.transpose_of2, UnitPair.mul]
  exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-! ### Sums over positions -/

/-- `Σ_{n<S} f n` for matrices. -/
@[expose] def sumRange {m n : Nat} (f : Nat → Mat α m n) : Nat → Mat α m n
  | 0 => 0
  | S + 1 => sumRange f S + f S

/-- `Σ_{n<S} f n` for scalars. -/
@[expose] def sumRangeS (f : Nat → α) : Nat → α
  | 0 => 0
  | S + 1 => sumRangeS f S + f S

/-- Real part of the geometric sum `Σ_{n<S} wⁿ`. -/
@[expose] def geomRe (w : UnitPair α) (S : Nat) : α := sumRangeS (fun n => (w.pow n).c) S

/-- Imaginary part of the geometric sum `Σ_{n<S} wⁿ`. -/
@[expose] def geomIm (w : UnitPair α) (S : Nat) : α := sumRangeS (fun n => (w.pow n).s) S

/-- The twirl sum `Σ_{n<S} R_n M R_nᵀ`. -/
@[expose] def twirlSum {k : Nat} (u : Fin k → UnitPair α) (M : Mat α (2 * k) (2 * k))
    (S : Nat) : Mat α (2 * k) (2 * k) :=
  sumRange (fun n => ropeR u n ⬝ M ⬝ (ropeR u n)ᵀ) S

/-- Blocks of a sum. -/
theorem block_sumRange {k : Nat} (f : Nat → Mat α (2 * k) (2 * k)) (p p' : Fin k) :
    ∀ S, block (sumRange f S) p p' = sumRange (fun n => block (f n) p p') S
  | 0 => rfl
  | S + 1 => by
    show block (sumRange f S + f S) p p' = sumRange (fun n => block (f n) p p') S + _
    rw [← block_sumRange f p p' S]; rfl

/-- A right factor comes out of a sum. -/
theorem sumRange_mul (f : Nat → Mat α 2 2) (X : Mat α 2 2) :
    ∀ S, sumRange (fun n => f n ⬝ X) S = sumRange f S ⬝ X
  | 0 => by show (0 : Mat α 2 2) = 0 ⬝ X; rw [Mat.zero_mul]
  | S + 1 => by
    show sumRange (fun n => f n ⬝ X) S + f S ⬝ X = (sumRange f S + f S) ⬝ X
    rw [sumRange_mul f X S, Mat.add_mul]

/-- A sum of two summands splits. -/
theorem sumRange_add (f g : Nat → Mat α 2 2) :
    ∀ S, sumRange (fun n => f n + g n) S = sumRange f S + sumRange g S
  | 0 => by apply Mat.ext; intro i j; simp only [sumRange, Mat.add_apply, Mat.zero_apply]; grind
  | S + 1 => by
    show sumRange (fun n => f n + g n) S + (f S + g S) =
      (sumRange f S + f S) + (sumRange g S + g S)
    rw [sumRange_add f g S]; apply Mat.ext; intro i j; simp only [Mat.add_apply]; grind

/-- The sum of rotations `Σ_{n<S} rot(wⁿ)` is the complex geometric sum. -/
theorem sumRange_rot (w : UnitPair α) :
    ∀ S, sumRange (fun n => rot (w.pow n)) S = spanIJ (geomRe w S) (geomIm w S)
  | 0 => by
    show (0 : Mat α 2 2) = spanIJ 0 0
    rw [Mat.zero_eq_of2]; simp only [spanIJ]; exact Mat.of2_eq_of2.mpr ⟨rfl, by grind, rfl, rfl⟩
  | S + 1 => by
    show sumRange (fun n => rot (w.pow n)) S + rot (w.pow S) =
      spanIJ (geomRe w S + (w.pow S).c) (geomIm w S + (w.pow S).s)
    rw [sumRange_rot w S]
    simp only [spanIJ, rot, add_of2]
    exact Mat.of2_eq_of2.mpr ⟨by grind, by grind, by grind, by grind⟩

/-- The blocks of one conjugated term: `(R_n M R_nᵀ)_{pp'} = rot(u_pⁿ) M_{pp'} rot(u_{p'}ⁿ)ᵀ`. -/
theorem block_conj_ropeR {k : Nat} (u : Fin k → UnitPair α) (M : Mat α (2 * k) (2 * k))
    (n : Nat) (p p' : Fin k) :
    block (ropeR u n ⬝ M ⬝ (ropeR u n)ᵀ) p p' =
      rot ((u p).pow n) ⬝ block M p p' ⬝ (rot ((u p').pow n))ᵀ := by
  simp only [ropeR]
  rw [blockDiag_transpose, block_mul_blockDiag, block_blockDiag_mul]

/-! ### The twirl identity -/

/-- [rope_twirl] Lem. 5.9, exact finite-`S` identity per frequency component: if the
block `(p, p')` of `M` is `X₊ + X₋` (`X₊ = xI + yJ` commuting with rotations,
`X₋ = [[x', y'], [y', -x']]`), then the same block of `Σ_{n<S} R_n M R_nᵀ` is
`G(w₊, S) X₊ + G(w₋, S) X₋`, where `w₊ = u_p ū_{p'}`, `w₋ = u_p u_{p'}` and
`G(w, S) = Σ_{n<S} rot(wⁿ) = spanIJ (Re Σ wⁿ) (Im Σ wⁿ)`; and
`(1 - w) Σ_{n<S} wⁿ = 1 - w^S` (`rope_twirl_geom`). -/
theorem rope_twirl {k : Nat} (u : Fin k → UnitPair α) (M : Mat α (2 * k) (2 * k))
    (p p' : Fin k) (x y x' y' : α) (hM : block M p p' = spanIJ x y + conjIJ x' y')
    (S : Nat) :
    block (twirlSum u M S) p p' =
      spanIJ (geomRe ((u p).mul (u p').conj) S) (geomIm ((u p).mul (u p').conj) S) ⬝
          spanIJ x y +
        spanIJ (geomRe ((u p).mul (u p')) S) (geomIm ((u p).mul (u p')) S) ⬝ conjIJ x' y' := by
  simp only [twirlSum]
  rw [block_sumRange]
  have hterm : ∀ n, block (ropeR u n ⬝ M ⬝ (ropeR u n)ᵀ) p p' =
      rot (((u p).mul (u p').conj).pow n) ⬝ spanIJ x y +
        rot (((u p).mul (u p')).pow n) ⬝ conjIJ x' y' := fun n => by
    rw [block_conj_ropeR, hM, Mat.mul_add, Mat.add_mul, rot_spanIJ_rot, rot_conjIJ_rot,
      UnitPair.mul_pow', UnitPair.mul_pow', UnitPair.conj_pow']
  simp only [hterm]
  rw [sumRange_add, sumRange_mul, sumRange_mul, sumRange_rot, sumRange_rot]

/-- [rope_twirl] The geometric sum: `(1 - w) Σ_{n<S} wⁿ = 1 - w^S` in the complex
numbers (`(1 - c, -s) · (Re, Im)`, componentwise). -/
theorem rope_twirl_geom (w : UnitPair α) (S : Nat) :
    (1 - w.c) * geomRe w S + w.s * geomIm w S = 1 - (w.pow S).c ∧
      (1 - w.c) * geomIm w S - w.s * geomRe w S = -(w.pow S).s := by
  induction S with
  | zero => simp only [geomRe, geomIm, sumRangeS, UnitPair.pow, UnitPair.one]; grind
  | succ S ih =>
    simp only [geomRe, geomIm, sumRangeS] at ih ⊢
    have e : w.pow (S + 1) = (w.pow S).mul w := rfl
    rw [e]; simp only [UnitPair.mul]
    obtain ⟨h1, h2⟩ := ih
    constructor <;> grind

/-- [rope_twirl] On a diagonal block the frequency difference vanishes (`w₊ = 1`): the
commuting part is multiplied by exactly `S`, i.e. kept by the average, while the
anti-commuting part is damped by the geometric sum of `w₋ = u_p²`. -/
theorem rope_twirl_diag {k : Nat} (u : Fin k → UnitPair α) (M : Mat α (2 * k) (2 * k))
    (p : Fin k) (x y x' y' : α) (hM : block M p p = spanIJ x y + conjIJ x' y') (S : Nat) :
    block (twirlSum u M S) p p =
      spanIJ (S : α) 0 ⬝ spanIJ x y +
        spanIJ (geomRe ((u p).mul (u p)) S) (geomIm ((u p).mul (u p)) S) ⬝ conjIJ x' y' := by
  rw [rope_twirl u M p p x y x' y' hM S, UnitPair.mul_conj']
  have hre : ∀ S, geomRe (UnitPair.one : UnitPair α) S = (S : α) := fun S => by
    induction S with
    | zero => simp only [geomRe, sumRangeS]; grind
    | succ S ih =>
      simp only [geomRe, sumRangeS] at ih ⊢; rw [ih, UnitPair.one_pow']
      simp only [UnitPair.one]; grind
  have him : ∀ S, geomIm (UnitPair.one : UnitPair α) S = 0 := fun S => by
    induction S with
    | zero => rfl
    | succ S ih =>
      simp only [geomIm, sumRangeS] at ih ⊢; rw [ih, UnitPair.one_pow']
      simp only [UnitPair.one]; grind
  rw [hre, him]

/-- [rope_twirl] The commutant is untouched: a matrix commuting with every `R_n` is
fixed by every conjugation, so `Σ_{n<S} R_n M R_nᵀ = S · M`. -/
theorem rope_twirl_commutant {k : Nat} (u : Fin k → UnitPair α) (M : Mat α (2 * k) (2 * k))
    (hM : ∀ n, M ⬝ ropeR u n = ropeR u n ⬝ M) (S : Nat) :
    twirlSum u M S = (S : α) • M := by
  obtain ⟨_, _, _, hT'⟩ := rope_group u
  induction S with
  | zero =>
    apply Mat.ext; intro i j
    simp only [twirlSum, sumRange, Mat.zero_apply, Mat.smul_apply]; grind
  | succ S ih =>
    show twirlSum u M S + ropeR u S ⬝ M ⬝ (ropeR u S)ᵀ = _
    rw [ih, ← hM S, Mat.mul_assoc, hT' S, Mat.mul_one]
    apply Mat.ext; intro i j
    simp only [Mat.add_apply, Mat.smul_apply]; grind

end Pldr

end
