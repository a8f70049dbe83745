"""Folders and files the hook writes under the output folder, which others may
share (/tmp, a team's scratch space): the hook's folders are used only when
they are real folders of this user's (a symlink is refused, never followed),
and files are created exclusively, never written through a symlink. The same
rules as core/base's file_io.h (makeOwnFolder, createExclusive)."""
import errno
import os
import stat


def own_folder(path):
    """Make `path` (0700), or take it when it is already a real folder of this
    user's; OSError naming it otherwise."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "%s is a symlink, not a folder memscope made; refused" % path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "%s is not a folder" % path)
    if st.st_uid != os.geteuid():
        raise OSError(errno.EPERM, "%s belongs to another user (uid %d); refused"
                      % (path, st.st_uid))


def process_folder(directory):
    """DIR/.memscope-hook/<pid>: DIR made if missing (the user's choice of
    folder), the two levels below made or checked by own_folder."""
    root = os.path.dirname(directory)
    os.makedirs(os.path.dirname(root), exist_ok=True)
    own_folder(root)
    own_folder(directory)


def create_exclusive(path, mode=0o644):
    """A new file in a folder process_folder checked, for writing: a leftover
    there (this user's own) is removed first, then O_CREAT | O_EXCL |
    O_NOFOLLOW. The descriptor."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                   mode)


def open_append(path, mode=0o644):
    """The append-only log in a folder process_folder checked: never through
    a symlink, and only a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "%s is not a regular file; refused" % path)
    return fd
