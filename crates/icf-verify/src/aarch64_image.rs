//! The linked image as the AArch64 page analysis sees what lies around a
//! function (`aarch64_flow::Surroundings`): its bytes, landing pads, the
//! calls that never return (`noreturn.rs`, proved on demand), the DWARF
//! prototypes (`dwarf.rs`) and what known callees write. Apart from the
//! analysis, so that the proofs, which decode words of their own, do not
//! import it back.

use crate::aarch64_clobbers::CALLER_SAVED;
use crate::aarch64_flow::Surroundings;
use crate::image::Image;

impl Surroundings for Image {
    fn bytes(&self, address: u64, len: u64) -> Option<&[u8]> {
        Image::bytes(self, address, len)
    }

    fn is_landing_pad(&self, address: u64) -> bool {
        self.landing_pads.binary_search(&address).is_ok()
    }

    fn never_returns(&self, target: u64) -> bool {
        crate::noreturn::call_never_returns(self, target)
    }

    fn arguments_read(&self, entry: u64) -> Option<u8> {
        let found = self
            .argument_registers
            .binary_search_by_key(&entry, |&(address, _)| address)
            .ok()?;
        Some(self.argument_registers[found].1)
    }

    fn returns_one_register(&self, entry: u64) -> bool {
        self.single_register_returns.binary_search(&entry).is_ok()
    }

    fn returns_in_x0(&self, entry: u64) -> bool {
        self.integer_returns.binary_search(&entry).is_ok()
    }

    fn is_code(&self, address: u64) -> bool {
        Image::is_code(self, address)
    }

    fn call_clobbers(&self, entry: u64) -> u32 {
        self.call_clobbers
            .binary_search_by_key(&entry, |&(address, _)| address)
            .map_or(CALLER_SAVED, |found| self.call_clobbers[found].1)
    }
}
