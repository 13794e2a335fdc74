// SPDX-License-Identifier: GPL-2.0-only
/*
 * hil_testdev: guest driver for the harness's vfio-user test device (qemu/testdev/device.ts).
 * PCI ID 0x1ded:0x7e57 is for testing only. It enables MSI-X, requests one vector (so the
 * interrupt count shows in /proc/interrupts as "hil_testdev"), allocates two coherent DMA
 * buffers (src, dst), and exposes sysfs files on the PCI device:
 *
 *   cmd        (write) one command, see below; the write returns when it is done
 *   result     (read)  the last command's result, one line
 *   irq_count  (read)  interrupts handled
 *   buf_size   (read)  bytes in each buffer
 *
 * Commands:
 *   seed <off> <len> <seed>      CPU writes byte i = (seed + i * 7) & 0xff into src[off..]
 *   clear                        CPU zeroes both buffers
 *   fill <off> <len> <pattern>   device DMA: dst[off..off+len) = pattern (32-bit word repeated)
 *   copy <srcoff> <dstoff> <len> device DMA: src[srcoff..] -> dst[dstoff..]
 *   peek <src|dst> <off> <len>   result = hex of up to 64 bytes
 *   sum <src|dst> <off> <len>    result = FNV-1a 32 of the bytes
 *   bench_mmio <n>               result = average ns of a register read, a posted write
 *   bench_dma <fill|copy> <len> <n>  result = bytes and ns for n DMA commands of len bytes
 *
 * Register map: keep in sync with qemu/testdev/device.ts.
 */
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/string.h>

#define HIL_VENDOR 0x1ded
#define HIL_DEVICE 0x7e57
#define HIL_ID_VALUE 0x7e570001

#define REG_ID 0x00
#define REG_SCRATCH 0x04
#define REG_STATUS 0x08
#define REG_ERROR 0x0c
#define REG_SRC_LO 0x10
#define REG_SRC_HI 0x14
#define REG_DST_LO 0x18
#define REG_DST_HI 0x1c
#define REG_LEN 0x20
#define REG_PATTERN 0x24
#define REG_CMD 0x28
#define REG_IRQ_VECTOR 0x2c
#define REG_DONE_COUNT 0x30

#define ST_BUSY 1
#define ST_DONE 2
#define ST_ERROR 4
#define OP_COPY 1
#define OP_FILL 2
#define CMD_IRQ (1 << 8)

static unsigned int buf_size = 1 << 20;
module_param(buf_size, uint, 0444);
MODULE_PARM_DESC(buf_size, "bytes in each DMA buffer (default 1 MiB)");

static unsigned int timeout_ms = 20000;
module_param(timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms, "how long a DMA command may take");

struct hil_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void *buf[2];
	dma_addr_t dma[2];
	struct completion done;
	atomic_t irqs;
	struct mutex lock;
	char result[256];
	int irq;
};

static irqreturn_t hil_irq(int irq, void *data)
{
	struct hil_dev *hd = data;

	atomic_inc(&hd->irqs);
	complete(&hd->done);
	return IRQ_HANDLED;
}

/* One DMA command, waited for by its interrupt. */
static int hil_dma(struct hil_dev *hd, u32 op, dma_addr_t src, dma_addr_t dst, u32 len,
		   u32 pattern, u64 *ns)
{
	u32 status, err;
	u64 t0;

	reinit_completion(&hd->done);
	writel(lower_32_bits(src), hd->regs + REG_SRC_LO);
	writel(upper_32_bits(src), hd->regs + REG_SRC_HI);
	writel(lower_32_bits(dst), hd->regs + REG_DST_LO);
	writel(upper_32_bits(dst), hd->regs + REG_DST_HI);
	writel(len, hd->regs + REG_LEN);
	writel(pattern, hd->regs + REG_PATTERN);
	writel(0, hd->regs + REG_IRQ_VECTOR);
	t0 = ktime_get_ns();
	writel(op | CMD_IRQ, hd->regs + REG_CMD);
	if (!wait_for_completion_timeout(&hd->done, msecs_to_jiffies(timeout_ms))) {
		snprintf(hd->result, sizeof(hd->result), "error timeout status=%#x\n",
			 readl(hd->regs + REG_STATUS));
		return -ETIMEDOUT;
	}
	if (ns)
		*ns = ktime_get_ns() - t0;
	status = readl(hd->regs + REG_STATUS);
	err = readl(hd->regs + REG_ERROR);
	if (!(status & ST_DONE) || (status & ST_ERROR)) {
		snprintf(hd->result, sizeof(hd->result), "error device status=%#x code=%u\n", status, err);
		return -EIO;
	}
	return 0;
}

static int hil_range(u32 off, u32 len)
{
	return len > 0 && off <= buf_size && len <= buf_size - off;
}

static int hil_which(const char *name)
{
	if (!strcmp(name, "src"))
		return 0;
	if (!strcmp(name, "dst"))
		return 1;
	return -1;
}

static u32 fnv1a(const u8 *p, u32 len)
{
	u32 h = 0x811c9dc5;
	u32 i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x01000193;
	}
	return h;
}

static int hil_command(struct hil_dev *hd, const char *line)
{
	char word[16], which[8];
	u32 a, b, c;
	u64 ns = 0;
	int ret, w;

	if (sscanf(line, "%15s", word) != 1)
		return -EINVAL;

	if (!strcmp(word, "seed") && sscanf(line, "%*s %u %u %u", &a, &b, &c) == 3) {
		u8 *p = hd->buf[0];
		u32 i;

		if (!hil_range(a, b))
			return -ERANGE;
		for (i = 0; i < b; i++)
			p[a + i] = (c + i * 7) & 0xff;
		snprintf(hd->result, sizeof(hd->result), "ok\n");
		return 0;
	}
	if (!strcmp(word, "clear")) {
		memset(hd->buf[0], 0, buf_size);
		memset(hd->buf[1], 0, buf_size);
		snprintf(hd->result, sizeof(hd->result), "ok\n");
		return 0;
	}
	if (!strcmp(word, "fill") && sscanf(line, "%*s %u %u %i", &a, &b, &c) == 3) {
		if (!hil_range(a, b))
			return -ERANGE;
		ret = hil_dma(hd, OP_FILL, 0, hd->dma[1] + a, b, c, &ns);
		if (!ret)
			snprintf(hd->result, sizeof(hd->result), "ok ns=%llu\n", ns);
		return ret;
	}
	if (!strcmp(word, "copy") && sscanf(line, "%*s %u %u %u", &a, &b, &c) == 3) {
		if (!hil_range(a, c) || !hil_range(b, c))
			return -ERANGE;
		ret = hil_dma(hd, OP_COPY, hd->dma[0] + a, hd->dma[1] + b, c, 0, &ns);
		if (!ret)
			snprintf(hd->result, sizeof(hd->result), "ok ns=%llu\n", ns);
		return ret;
	}
	if ((!strcmp(word, "peek") || !strcmp(word, "sum")) &&
	    sscanf(line, "%*s %7s %u %u", which, &a, &b) == 3) {
		const u8 *p;

		w = hil_which(which);
		if (w < 0)
			return -EINVAL;
		if (!hil_range(a, b))
			return -ERANGE;
		p = (const u8 *)hd->buf[w] + a;
		if (word[0] == 's') {
			snprintf(hd->result, sizeof(hd->result), "ok fnv=%08x\n", fnv1a(p, b));
		} else {
			u32 i, n = min_t(u32, b, 64);
			char *out = hd->result;

			out += sprintf(out, "ok ");
			for (i = 0; i < n; i++)
				out += sprintf(out, "%02x", p[i]);
			sprintf(out, "\n");
		}
		return 0;
	}
	if (!strcmp(word, "bench_mmio") && sscanf(line, "%*s %u", &a) == 1) {
		u64 t0, tr, tw;
		u32 i, v = 0;

		if (a == 0 || a > 1000000)
			return -ERANGE;
		t0 = ktime_get_ns();
		for (i = 0; i < a; i++)
			v += readl(hd->regs + REG_SCRATCH);
		tr = ktime_get_ns() - t0;
		t0 = ktime_get_ns();
		for (i = 0; i < a; i++)
			writel(i, hd->regs + REG_SCRATCH);
		(void)readl(hd->regs + REG_SCRATCH); /* flush the posted writes */
		tw = ktime_get_ns() - t0;
		snprintf(hd->result, sizeof(hd->result), "ok n=%u read_ns=%llu write_ns=%llu sink=%u\n",
			 a, div_u64(tr, a), div_u64(tw, a), v);
		return 0;
	}
	if (!strcmp(word, "bench_dma") && sscanf(line, "%*s %7s %u %u", which, &a, &b) == 3) {
		u64 total = 0;
		u32 i, op;

		if (!strcmp(which, "fill"))
			op = OP_FILL;
		else if (!strcmp(which, "copy"))
			op = OP_COPY;
		else
			return -EINVAL;
		if (!hil_range(0, a) || b == 0 || b > 100000)
			return -ERANGE;
		for (i = 0; i < b; i++) {
			ret = hil_dma(hd, op, hd->dma[0], hd->dma[1], a, 0x01020304, &ns);
			if (ret)
				return ret;
			total += ns;
		}
		snprintf(hd->result, sizeof(hd->result), "ok bytes=%llu ns=%llu n=%u\n",
			 (u64)a * b, total, b);
		return 0;
	}
	return -EINVAL;
}

static ssize_t cmd_store(struct device *dev, struct device_attribute *attr, const char *buf,
			 size_t count)
{
	struct hil_dev *hd = dev_get_drvdata(dev);
	int ret;

	mutex_lock(&hd->lock);
	hd->result[0] = 0;
	ret = hil_command(hd, buf);
	if (ret && strncmp(hd->result, "error", 5))
		snprintf(hd->result, sizeof(hd->result), "error %d\n", ret);
	mutex_unlock(&hd->lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(cmd);

static ssize_t result_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct hil_dev *hd = dev_get_drvdata(dev);
	ssize_t n;

	mutex_lock(&hd->lock);
	n = scnprintf(buf, PAGE_SIZE, "%s", hd->result);
	mutex_unlock(&hd->lock);
	return n;
}
static DEVICE_ATTR_RO(result);

static ssize_t irq_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct hil_dev *hd = dev_get_drvdata(dev);

	return scnprintf(buf, PAGE_SIZE, "%d\n", atomic_read(&hd->irqs));
}
static DEVICE_ATTR_RO(irq_count);

static ssize_t buf_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return scnprintf(buf, PAGE_SIZE, "%u\n", buf_size);
}
static DEVICE_ATTR_RO(buf_size);

static struct attribute *hil_attrs[] = {
	&dev_attr_cmd.attr,
	&dev_attr_result.attr,
	&dev_attr_irq_count.attr,
	&dev_attr_buf_size.attr,
	NULL,
};
ATTRIBUTE_GROUPS(hil);

static void hil_free_buffers(struct hil_dev *hd)
{
	int i;

	for (i = 0; i < 2; i++)
		if (hd->buf[i])
			dma_free_coherent(&hd->pdev->dev, buf_size, hd->buf[i], hd->dma[i]);
}

static int hil_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct hil_dev *hd;
	u32 ident;
	int ret, i;

	hd = kzalloc(sizeof(*hd), GFP_KERNEL);
	if (!hd)
		return -ENOMEM;
	hd->pdev = pdev;
	init_completion(&hd->done);
	mutex_init(&hd->lock);
	snprintf(hd->result, sizeof(hd->result), "idle\n");
	pci_set_drvdata(pdev, hd);

	ret = pci_enable_device(pdev);
	if (ret)
		goto err_free;
	ret = pci_request_region(pdev, 0, "hil_testdev");
	if (ret)
		goto err_disable;
	hd->regs = pci_iomap(pdev, 0, 0);
	if (!hd->regs) {
		ret = -ENOMEM;
		goto err_region;
	}
	ident = readl(hd->regs + REG_ID);
	if (ident != HIL_ID_VALUE) {
		dev_err(&pdev->dev, "unexpected ID register %#x\n", ident);
		ret = -ENODEV;
		goto err_unmap;
	}
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err_unmap;
	for (i = 0; i < 2; i++) {
		hd->buf[i] = dma_alloc_coherent(&pdev->dev, buf_size, &hd->dma[i], GFP_KERNEL);
		if (!hd->buf[i]) {
			ret = -ENOMEM;
			goto err_buffers;
		}
	}
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (ret < 0)
		goto err_buffers;
	hd->irq = pci_irq_vector(pdev, 0);
	ret = request_irq(hd->irq, hil_irq, 0, "hil_testdev", hd);
	if (ret)
		goto err_vectors;
	dev_info(&pdev->dev, "hil_testdev: MSI-X irq %d, 2 x %u byte DMA buffers at %pad %pad\n",
		 hd->irq, buf_size, &hd->dma[0], &hd->dma[1]);
	return 0;

err_vectors:
	pci_free_irq_vectors(pdev);
err_buffers:
	hil_free_buffers(hd);
err_unmap:
	pci_iounmap(pdev, hd->regs);
err_region:
	pci_release_region(pdev, 0);
err_disable:
	pci_disable_device(pdev);
err_free:
	kfree(hd);
	return ret;
}

static void hil_remove(struct pci_dev *pdev)
{
	struct hil_dev *hd = pci_get_drvdata(pdev);

	free_irq(hd->irq, hd);
	pci_free_irq_vectors(pdev);
	hil_free_buffers(hd);
	pci_iounmap(pdev, hd->regs);
	pci_release_region(pdev, 0);
	pci_disable_device(pdev);
	kfree(hd);
}

static const struct pci_device_id hil_ids[] = {
	{ PCI_DEVICE(HIL_VENDOR, HIL_DEVICE) },
	{ 0 }
};
MODULE_DEVICE_TABLE(pci, hil_ids);

static struct pci_driver hil_driver = {
	.name = "hil_testdev",
	.id_table = hil_ids,
	.probe = hil_probe,
	.remove = hil_remove,
	.dev_groups = hil_groups,
};
module_pci_driver(hil_driver);

MODULE_DESCRIPTION("Driver for the erdma-hil vfio-user test device (test-only PCI ID 1ded:7e57)");
MODULE_LICENSE("GPL");
