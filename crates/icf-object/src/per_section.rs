//! Lists of values per section, stored flat: one allocation for all
//! sections of an object instead of a map of vectors (objects built with
//! `-ffunction-sections` have a section per function).

use crate::SectionIndex;

/// For each section, a slice of `T`s (empty for most sections).
#[derive(Clone, Debug)]
pub struct PerSection<T> {
    /// `items[starts[i]..starts[i + 1]]` belong to section `i`.
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Default for PerSection<T> {
    fn default() -> Self {
        PerSection {
            starts: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl<T> PerSection<T> {
    /// Groups `pairs` by section, keeping their order within a section.
    /// Sections at or past `sections` are ignored.
    pub fn new(sections: usize, mut pairs: Vec<(SectionIndex, T)>) -> PerSection<T> {
        pairs.retain(|(section, _)| section.index() < sections);
        pairs.sort_by_key(|&(section, _)| section);
        let mut starts = Vec::with_capacity(sections + 1);
        let mut at = 0;
        for section in 0..=sections {
            while pairs.get(at).is_some_and(|(s, _)| s.index() < section) {
                at += 1;
            }
            starts.push(at as u32);
        }
        PerSection {
            starts,
            items: pairs.into_iter().map(|(_, item)| item).collect(),
        }
    }

    /// The values of `section`, empty when it has none.
    pub fn get(&self, section: SectionIndex) -> &[T] {
        match (
            self.starts.get(section.index()),
            self.starts.get(section.index() + 1),
        ) {
            (Some(&start), Some(&end)) => &self.items[start as usize..end as usize],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_section_in_order() {
        let lists = PerSection::new(
            4,
            vec![
                (SectionIndex(2), 'a'),
                (SectionIndex(0), 'b'),
                (SectionIndex(2), 'c'),
                (SectionIndex(9), 'x'),
            ],
        );
        assert_eq!(lists.get(SectionIndex(0)), ['b']);
        assert_eq!(lists.get(SectionIndex(1)), [] as [char; 0]);
        assert_eq!(lists.get(SectionIndex(2)), ['a', 'c']);
        assert_eq!(lists.get(SectionIndex(3)), [] as [char; 0]);
        assert_eq!(lists.get(SectionIndex(9)), [] as [char; 0]);
    }
}
