package cdi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/migpro/migpro/gpu"
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
// paths inside paths.DevDir. Every host node must exist and be a character
// device, so a spec never names a node a runtime cannot find.
func deviceNodes(i Instance, paths gpu.DriverPaths) ([]*specs.DeviceNode, error) {
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
	rel := []string{
		fmt.Sprintf("nvidia%d", i.GPUMinor),
		"nvidiactl",
		"nvidia-uvm",
		"nvidia-uvm-tools",
		filepath.Join("nvidia-caps", fmt.Sprintf("nvidia-cap%d", giMinor)),
		filepath.Join("nvidia-caps", fmt.Sprintf("nvidia-cap%d", ciMinor)),
	}
	nodes := make([]*specs.DeviceNode, 0, len(rel))
	for _, r := range rel {
		host := filepath.Join(paths.DevDir, r)
		if err := checkCharDevice(host); err != nil {
			return nil, err
		}
		nodes = append(nodes, specNode(paths.DevDir, r))
	}
	return nodes, nil
}

// specNode is the spec's entry for node rel of devDir: the standard /dev path
// in the container, and the host path only when it differs, since hostPath
// needs cdiVersion 0.5.0.
func specNode(devDir, rel string) *specs.DeviceNode {
	n := &specs.DeviceNode{Path: filepath.Join(containerDevDir, rel)}
	if host := filepath.Join(devDir, rel); host != n.Path {
		n.HostPath = host
	}
	return n
}

func checkCharDevice(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("device node: %w", err)
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("device node %s is not a character device (mode %s)", path, fi.Mode())
	}
	return nil
}
