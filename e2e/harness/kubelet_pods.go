package harness

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func insecureTLS() *tls.Config {
	// The kubelet serves a self-signed certificate from its root dir.
	return &tls.Config{InsecureSkipVerify: true}
}

// Pods returns the kubelet's pods from https://<Address>:10250/pods.
func (k *Kubelet) Pods() ([]corev1.Pod, error) {
	resp, err := insecureClient.Get("https://" + net.JoinHostPort(k.Address, "10250") + "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /pods: %s: %s", resp.Status, body)
	}
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode /pods: %w", err)
	}
	return list.Items, nil
}

// Pod returns the pod named name (the manifest name; the static pod's
// "-<NodeName>" suffix is added) and whether it exists.
func (k *Kubelet) Pod(name string) (corev1.Pod, bool, error) {
	pods, err := k.Pods()
	if err != nil {
		return corev1.Pod{}, false, err
	}
	for _, p := range pods {
		if p.Name == name || p.Name == k.PodName(name) {
			return p, true, nil
		}
	}
	return corev1.Pod{}, false, nil
}

// PodName is the name the kubelet gives the static pod from a manifest
// whose metadata.name is name.
func (k *Kubelet) PodName(name string) string { return name + "-" + k.NodeName }

// WriteStaticPod writes manifest (YAML or JSON) as <name>.yaml in
// StaticPodDir, atomically (temp file, then rename), so the kubelet never
// reads half a file. It is removed at cleanup if still there.
func (k *Kubelet) WriteStaticPod(t testing.TB, name, manifest string) {
	t.Helper()
	path := filepath.Join(k.StaticPodDir, name+".yaml")
	// A temp name starting with "." is ignored by the kubelet.
	if err := writeAtomic(path, []byte(manifest), 0o644); err != nil {
		t.Fatalf("write static pod %s: %v", name, err)
	}
	t.Cleanup(func() { os.Remove(path) })
}

// RemoveStaticPod deletes the manifest written by WriteStaticPod; the
// kubelet then stops the pod.
func (k *Kubelet) RemoveStaticPod(t testing.TB, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(k.StaticPodDir, name+".yaml")); err != nil {
		t.Fatalf("remove static pod %s: %v", name, err)
	}
}

// WaitPodRunning waits up to timeout until pod name is Running (or has
// Succeeded: a short container may finish first) and returns it. It fails
// t, with the pod status and kubelet log tail, on timeout or if the pod
// fails.
func (k *Kubelet) WaitPodRunning(t testing.TB, name string, timeout time.Duration) corev1.Pod {
	t.Helper()
	return k.waitPod(t, name, timeout, func(p corev1.Pod, ok bool) (bool, error) {
		if !ok {
			return false, nil
		}
		switch p.Status.Phase {
		case corev1.PodRunning, corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			return false, fmt.Errorf("pod %s failed: %s %s", name, p.Status.Reason, p.Status.Message)
		}
		return false, nil
	})
}

// WaitPodGone waits up to timeout until pod name is no longer listed.
func (k *Kubelet) WaitPodGone(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	k.waitPod(t, name, timeout, func(_ corev1.Pod, ok bool) (bool, error) { return !ok, nil })
}

func (k *Kubelet) waitPod(t testing.TB, name string, timeout time.Duration, done func(corev1.Pod, bool) (bool, error)) corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last corev1.Pod
	var lastErr error
	for time.Now().Before(deadline) {
		p, ok, err := k.Pod(name)
		lastErr = err
		if err == nil {
			last = p
			fin, ferr := done(p, ok)
			if ferr != nil {
				t.Fatalf("%v\nstatus: %s\nkubelet log tail:\n%s", ferr, statusJSON(p), tail(k.logPath, 40))
			}
			if fin {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pod %s: condition not met within %v (last error %v)\nstatus: %s\nkubelet log tail:\n%s",
		name, timeout, lastErr, statusJSON(last), tail(k.logPath, 40))
	return last
}

func statusJSON(p corev1.Pod) string {
	b, _ := json.MarshalIndent(p.Status, "", "  ")
	return string(b)
}

// ContainerLog returns what container wrote to stdout and stderr in pod name
// (manifest name), read from PodLogsDir with the CRI log prefixes removed.
// Logs of all restarts are concatenated, oldest first.
func (k *Kubelet) ContainerLog(t testing.TB, name, container string) string {
	t.Helper()
	var files []string
	for _, pod := range []string{name, k.PodName(name)} {
		m, _ := filepath.Glob(filepath.Join(k.PodLogsDir, "*_"+pod+"_*", container, "*.log"))
		files = append(files, m...)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		s, err := readCRILog(f)
		if err != nil {
			t.Fatalf("read container log: %v", err)
		}
		b.WriteString(s)
	}
	return b.String()
}

// readCRILog decodes a CRI log file: "<time> <stream> <P|F> <text>" lines,
// where P marks a partial line.
func readCRILog(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 3 {
			continue
		}
		text := ""
		if len(parts) == 4 {
			text = parts[3]
		}
		b.WriteString(text)
		if parts[2] != "P" {
			b.WriteByte('\n')
		}
	}
	return b.String(), sc.Err()
}
