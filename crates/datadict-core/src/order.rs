//! One stable sort for the crate and its users, so that the web app's wasm carries a single copy
//! of the standard library's sort code instead of one per element and comparator type.
//!
//! `slice::sort_by` is generic over both the element and the closure, and each instantiation
//! brings a dozen helper functions; in a browser build that added up to tens of kilobytes. Here
//! the standard sort runs once, on indices with a `&dyn` comparator, and the items are then moved
//! into that order. The result is exactly that of `slice::sort_by`: stable, ties keep input order.

use std::cmp::Ordering;

/// The stable order of `len` items compared by index: position `k` of the result is the index of
/// the item that sorts `k`th.
pub fn sorted_indices(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Sorts `items` stably by `cmp`, like `slice::sort_by`, through the one sort of
/// [`sorted_indices`].
pub fn sort_by<T>(items: &mut Vec<T>, cmp: &dyn Fn(&T, &T) -> Ordering) {
    let order = sorted_indices(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    // Each index occurs once in `order`, so every slot is taken exactly once.
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// Sorts `items` in their natural order, like `slice::sort`.
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, &T::cmp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same result as the standard stable sort, ties included: pairs compared by their
        /// first field only keep the input order of their second.
        #[test]
        fn matches_the_standard_stable_sort(items in proptest::collection::vec((0u8..8, any::<u32>()), 0..200)) {
            let mut expected = items.clone();
            expected.sort_by_key(|p| p.0);
            let mut got = items;
            sort_by(&mut got, &|a, b| a.0.cmp(&b.0));
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn sorts_strings_in_natural_order(items in proptest::collection::vec("[a-c]{0,3}", 0..50)) {
            let mut expected = items.clone();
            expected.sort();
            let mut got = items;
            sort(&mut got);
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn sorted_indices_name_the_items_in_order() {
        let keys = [30, 10, 20, 10];
        assert_eq!(sorted_indices(keys.len(), &|a, b| keys[a].cmp(&keys[b])), [1, 3, 2, 0]);
        assert!(sorted_indices(0, &|_, _| Ordering::Equal).is_empty());
    }
}
