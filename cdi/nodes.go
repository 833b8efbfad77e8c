package cdi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/migpro/migpro/gpu"
	"golang.org/x/sys/unix"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// containerDevDir is where device nodes appear inside a container, whatever
// the host's DriverPaths say.
const containerDevDir = "/dev"

// capsMinorKey is the line of a MIG capability file that names the minor of
// its /dev/nvidia-caps/nvidia-cap<M> node.
const capsMinorKey = "DeviceFileMinor:"

// giAccessFile and ciAccessFile are the driver's capability files for an
// instance, relative to DriverPaths.CapsDir.
func giAccessFile(i Instance) string {
	return filepath.Join(fmt.Sprintf("gpu%d", i.GPUMinor), "mig", fmt.Sprintf("gi%d", i.GIID), "access")
}

func ciAccessFile(i Instance) string {
	return filepath.Join(fmt.Sprintf("gpu%d", i.GPUMinor), "mig", fmt.Sprintf("gi%d", i.GIID), fmt.Sprintf("ci%d", i.CIID), "access")
}

// readCapsMinor reads the "DeviceFileMinor: M" line of a capability file.
func readCapsMinor(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read MIG capability file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), capsMinorKey)
		if !ok {
			continue
		}
		m, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || m < 0 {
			return 0, fmt.Errorf("MIG capability file %s: bad %s line %q", path, capsMinorKey, sc.Text())
		}
		return m, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read MIG capability file %s: %w", path, err)
	}
	return 0, fmt.Errorf("MIG capability file %s has no %s line", path, capsMinorKey)
}

// deviceNodes lists the nodes a container needs to use instance i, with host
// paths inside paths.DevDir: the control nodes (unless control is false,
// when the driver's common edits carry them) and the instance's own. Every
// host node must exist and be a character device, so a spec never names a
// node a runtime cannot find. The entries are what nvcdi writes for the same
// nodes: path, host path, major, minor, file mode, group and "rwm".
func deviceNodes(i Instance, paths gpu.DriverPaths, control bool) ([]*specs.DeviceNode, error) {
	if paths.DevDir == "" || paths.CapsDir == "" {
		return nil, fmt.Errorf("driver paths are not set (dev dir %q, caps dir %q)", paths.DevDir, paths.CapsDir)
	}
	giMinor, err := readCapsMinor(filepath.Join(paths.CapsDir, giAccessFile(i)))
	if err != nil {
		return nil, err
	}
	ciMinor, err := readCapsMinor(filepath.Join(paths.CapsDir, ciAccessFile(i)))
	if err != nil {
		return nil, err
	}
	rel := []string{fmt.Sprintf("nvidia%d", i.GPUMinor)}
	if control {
		rel = append(rel, controlNodes...)
	}
	rel = append(rel,
		filepath.Join("nvidia-caps", fmt.Sprintf("nvidia-cap%d", giMinor)),
		filepath.Join("nvidia-caps", fmt.Sprintf("nvidia-cap%d", ciMinor)),
	)
	nodes := make([]*specs.DeviceNode, 0, len(rel))
	for _, r := range rel {
		n, err := specNode(paths.DevDir, r)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// controlNodes are the driver's nodes every instance needs, relative to the
// dev dir.
var controlNodes = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}

// specNode is the spec's entry for node rel of devDir: the standard /dev path
// in the container, the host path only when it differs (hostPath needs
// cdiVersion 0.5.0), and the node's numbers, mode and group as the host has
// them. The owner is left out, so the runtime gives the container's user.
func specNode(devDir, rel string) (*specs.DeviceNode, error) {
	host := filepath.Join(devDir, rel)
	var st unix.Stat_t
	if err := unix.Stat(host, &st); err != nil {
		return nil, fmt.Errorf("device node: stat %s: %w", host, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, fmt.Errorf("device node %s is not a character device (mode %s)", host, os.FileMode(st.Mode))
	}
	n := &specs.DeviceNode{
		Path:        filepath.Join(containerDevDir, rel),
		Major:       int64(unix.Major(st.Rdev)),
		Minor:       int64(unix.Minor(st.Rdev)),
		Permissions: "rwm",
	}
	if host != n.Path {
		n.HostPath = host
	}
	if m := os.FileMode(st.Mode &^ unix.S_IFMT); m != 0 {
		n.FileMode = &m
	}
	if st.Gid != 0 {
		g := st.Gid
		n.GID = &g
	}
	return n, nil
}
