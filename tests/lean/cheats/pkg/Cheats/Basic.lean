module

/-! Cheats that compile in one file: each theorem or definition below must be refused. -/

public section
namespace Cheats

theorem c_sorry : 1 = 2 := by sorry

set_option warn.sorry false in
theorem c_sorry_ax : False := sorryAx False false

macro "trust_me" : term => `(sorry)

set_option warn.sorry false in
theorem c_macro : 1 = 3 := trust_me

axiom c_axiom_fact : 2 + 2 = 5

theorem c_axiom : 2 + 2 = 5 := c_axiom_fact

def c_impl_fast (n : Nat) : Nat := n

@[implemented_by c_impl_fast]
def c_impl (n : Nat) : Nat := n + 0

@[extern "pyverify_c_extern"]
def c_extern (n : Nat) : Nat := n

set_option debug.skipKernelTC true in
theorem c_skip_kernel : 1 + 1 = 2 := rfl

unsafe def c_unsafe_def : Nat := 0

partial def c_partial (n : Nat) : Nat := c_partial n

opaque c_opaque : Nat

end Cheats
end
