//! Reading an image of either format: the file's magic picks the reader
//! (`elf/read.rs` for ELF, `macho/read.rs` for Mach-O), and the parts it
//! finds are assembled into one [`Image`].

use crate::elf::read::read_elf;
use crate::error::Error;
use crate::image::Image;
use crate::macho;
use std::path::Path;

impl Image {
    /// Reads and checks `path`: its sections, symbols and relocations;
    /// what the analyses find in it is filled in by the caller
    /// (`load_image` and `analyse_code` in `lib.rs`).
    pub fn read(path: &Path) -> Result<Image, Error> {
        let data =
            std::fs::read(path).map_err(|e| Error::new(path, format!("cannot read: {e}")))?;
        Image::parse(path, data)
    }

    /// Reads the image in `data`, the bytes of `path`: a Mach-O image
    /// (`macho/read.rs`) or an ELF one (`elf/read.rs`: its file header and sections, its
    /// symbols, the relocations a `-q` link kept and the dynamic ones, what
    /// it exports). The analyses' fields are empty.
    pub(crate) fn parse(path: &Path, data: Vec<u8>) -> Result<Image, Error> {
        let parts = if macho::read::is_macho(&data) {
            macho::read::read(path, data)?
        } else {
            read_elf(path, data)?
        };
        Ok(Image::assemble(parts))
    }
}
