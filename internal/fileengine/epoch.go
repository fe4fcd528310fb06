package fileengine

// Master-key epochs (docs/format.md §3b): a new file's header gets the
// suite's current epoch (file.go), an existing file keeps the epoch of its
// header, and a file emptied by truncate(0) (open with O_TRUNC: how most
// programs rewrite a file in place) moves to the current epoch, since no
// chunk under the old file key is left.

// renewEpoch gives the empty file f (header only) the current epoch: the
// same file ID, flags and bindings, a header MAC and a file key of the new
// epoch. The cut to the header is made durable first: a crash must not
// leave a header of the new epoch before chunks of the old one. A header
// write that fails but leaves the old header in place is no error: the
// file stays, empty, in its old epoch.
func (f *File) renewEpoch() error {
	cur := f.e.suite.Epoch()
	if !f.hasHeader || f.hdr.Epoch == cur {
		return nil
	}
	h := f.hdr
	h.Epoch = cur
	fc, err := f.e.suite.FileOf(h)
	if err != nil {
		return err
	}
	if err := f.b.Sync(); err != nil {
		return err
	}
	if kept, err := f.writeHeader(h); err != nil {
		if kept {
			return nil
		}
		return err
	}
	f.fc = fc
	return nil
}
