module

/-! Proofs by the compiler's evaluation instead of the kernel's. -/

public section
namespace Cheats

theorem c_native_decide : 10 < 20 := by native_decide

theorem c_decide_native : 10 < 21 := by decide +native

end Cheats
end
