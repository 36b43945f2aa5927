//! Nodes by index, where a node may for now live in another partition of a parallel run (its
//! slot here is empty then). A fabric run on one thread has every slot full.

/// Nodes of one kind (hosts or switches) by index.
#[derive(Debug)]
pub(crate) struct Slots<T>(Vec<Option<T>>);

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots(Vec::new())
    }
}

impl<T> Slots<T> {
    /// `n` empty slots.
    pub(crate) fn empty(n: usize) -> Self {
        Slots(std::iter::repeat_with(|| None).take(n).collect())
    }

    /// Number of slots, full or not.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Appends a node.
    pub(crate) fn push(&mut self, t: T) {
        self.0.push(Some(t));
    }

    /// The node at `i`, if it is here.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.0.get(i).and_then(Option::as_ref)
    }

    /// The node at `i`, if it is here.
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.0.get_mut(i).and_then(Option::as_mut)
    }

    /// The nodes that are here, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().flatten()
    }

    /// The nodes that are here, in index order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.0.iter_mut().flatten()
    }

    /// Moves the node at `i` (if here) into `to`'s slot `i`.
    pub(crate) fn move_to(&mut self, i: usize, to: &mut Slots<T>) {
        if let (Some(from), Some(slot)) = (self.0.get_mut(i), to.0.get_mut(i)) {
            if from.is_some() {
                *slot = from.take();
            }
        }
    }
}
