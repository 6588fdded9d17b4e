package launch

import (
	"os"
)

func checkSupported() error { return nil }

// sealedFile returns an unlinked temporary file holding data at offset 0.
// darwin has no memfd or seals; the file is private to this process and
// the child once unlinked.
func sealedFile(name string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp("", name+"-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// setNotDumpable does nothing on darwin, which has no PR_SET_DUMPABLE (see
// Config.LeaveDumpable).
func setNotDumpable() error { return nil }
