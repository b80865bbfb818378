module

/-! The clean control: it must pass the audit. -/

public section
namespace Cheats

/-- Addition on `Nat` commutes (a plain proof, no cheat). -/
theorem clean_add_comm (a b : Nat) : a + b = b + a := by omega

end Cheats
end
