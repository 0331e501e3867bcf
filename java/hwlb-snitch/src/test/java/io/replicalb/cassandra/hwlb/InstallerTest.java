package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.IEndpointSnitch;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SnitchInstaller} with a fake node slot and fake DynamicEndpointSnitches, from both start
 * configurations: {@code dynamic_snitch: false} (the node reads with the plug-in) and
 * {@code dynamic_snitch: true} (Cassandra wrapped the plug-in in a DynamicEndpointSnitch).
 */
class InstallerTest
{
    /** A stand-in for DynamicEndpointSnitch: what it wraps and whether it was closed. */
    static final class FakeDes extends TestCluster.RankSnitch
    {
        final IEndpointSnitch wrapped;
        boolean closed;

        FakeDes(IEndpointSnitch wrapped)
        {
            super(Map.of());
            this.wrapped = wrapped;
        }
    }

    /** The node's slot and the DES operations, logging what happened in order. */
    static final class FakeNode implements SnitchInstaller.NodeSnitch, SnitchInstaller.DesOps
    {
        IEndpointSnitch current;
        final List<String> log = new ArrayList<>();

        @Override
        public IEndpointSnitch current()
        {
            return current;
        }

        @Override
        public void install(IEndpointSnitch snitch)
        {
            current = snitch;
            log.add("install " + (snitch instanceof FakeDes ? "des" : snitch instanceof HwlbSnitch ? "plugin" : "other"));
        }

        @Override
        public boolean isDes(IEndpointSnitch snitch)
        {
            return snitch instanceof FakeDes;
        }

        @Override
        public IEndpointSnitch wrapped(IEndpointSnitch des)
        {
            return ((FakeDes) des).wrapped;
        }

        @Override
        public IEndpointSnitch create(IEndpointSnitch inner)
        {
            log.add("create");
            return new FakeDes(inner);
        }

        @Override
        public void close(IEndpointSnitch des)
        {
            assertFalse(((FakeDes) des).closed, "closed once");
            ((FakeDes) des).closed = true;
            log.add("close");
        }
    }

    private static HwlbSnitch plugin()
    {
        return new HwlbSnitch(HwlbSettings.defaults(), new TestCluster.RankSnitch(Map.of()), ep(21));
    }

    @Test
    void startedWithoutDynamicSnitchTheUnifiedPluginStaysAndDynamicSnitchComesAndGoes()
    {
        HwlbSnitch plugin = plugin();
        IEndpointSnitch inner = plugin.router().inner();
        FakeNode node = new FakeNode();
        node.current = plugin;
        SnitchInstaller installer = new SnitchInstaller(plugin, inner, node, node);
        assertFalse(installer.apply(CoordinatorPolicy.UNIFIED));
        assertFalse(installer.apply(CoordinatorPolicy.NAIVE));
        assertTrue(node.log.isEmpty());

        assertTrue(installer.apply(CoordinatorPolicy.DYNAMIC_SNITCH));
        FakeDes des = (FakeDes) node.current;
        assertSame(inner, des.wrapped, "a fresh DynamicEndpointSnitch over the inner snitch, not over the plug-in");
        assertFalse(installer.apply(CoordinatorPolicy.DYNAMIC_SNITCH), "already installed");

        assertTrue(installer.apply(CoordinatorPolicy.HWLB));
        assertSame(plugin, node.current);
        assertTrue(des.closed, "switching away closes it");
        assertEquals(List.of("create", "install des", "install plugin", "close"), node.log);
    }

    @Test
    void startedWithDynamicSnitchThePluginTakesItOut()
    {
        HwlbSnitch plugin = plugin();
        FakeNode node = new FakeNode();
        FakeDes cassandras = new FakeDes(plugin);
        node.current = cassandras;
        SnitchInstaller installer = new SnitchInstaller(plugin, plugin.router().inner(), node, node);
        assertTrue(installer.apply(CoordinatorPolicy.UNIFIED));
        assertSame(plugin, node.current, "the plug-in reads directly");
        assertTrue(cassandras.closed);
        assertEquals(List.of("install plugin", "close"), node.log);
    }

    @Test
    void startedWithDynamicSnitchInPolicyDynamicSnitchItIsReplacedByOneOverTheInnerSnitch()
    {
        HwlbSnitch plugin = plugin();
        FakeNode node = new FakeNode();
        FakeDes cassandras = new FakeDes(plugin);
        node.current = cassandras;
        SnitchInstaller installer = new SnitchInstaller(plugin, plugin.router().inner(), node, node);
        assertTrue(installer.apply(CoordinatorPolicy.DYNAMIC_SNITCH));
        assertSame(plugin.router().inner(), ((FakeDes) node.current).wrapped);
        assertTrue(cassandras.closed);
        // Closed before the fresh one is created: both register the same MBean name.
        assertEquals(List.of("close", "create", "install des"), node.log);
    }

    @Test
    void aSnitchReplacedByTheOperatorIsLeftAlone()
    {
        HwlbSnitch plugin = plugin();
        FakeNode node = new FakeNode();
        IEndpointSnitch other = new TestCluster.RankSnitch(Map.of());
        node.current = other;
        SnitchInstaller installer = new SnitchInstaller(plugin, plugin.router().inner(), node, node);
        assertFalse(installer.apply(CoordinatorPolicy.UNIFIED));
        assertFalse(installer.apply(CoordinatorPolicy.DYNAMIC_SNITCH));
        assertSame(other, node.current);
        assertTrue(node.log.isEmpty());
    }

    @Test
    void theSettingsTableAndTheOldSwitchDriveTheInstaller()
    {
        HwlbSnitch plugin = plugin();
        FakeNode node = new FakeNode();
        node.current = new FakeDes(plugin);
        SnitchInstaller installer = new SnitchInstaller(plugin, plugin.router().inner(), node, node);
        plugin.switchControl().listen(installer::apply);
        assertSame(plugin, node.current, "listening applies the start policy (unified)");
        HwlbControl c = plugin.control();
        assertEquals("unified", c.settingsNow().get("policy"));
        assertEquals("true", c.settingsNow().get("enabled"), "enabled reads true for unified");
        c.write("policy", "dynamic-snitch");
        assertTrue(node.current instanceof FakeDes);
        assertEquals("false", c.settingsNow().get("enabled"));
        c.write("enabled", "true");
        assertSame(plugin, node.current);
        assertEquals("hwlb", c.getPolicy());
        c.write("enabled", "false");
        assertEquals("naive", c.getPolicy());
        c.write("policy", "UNIFIED");
        assertEquals("unified", c.getPolicy());
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> c.write("policy", "c3"));
        assertTrue(e.getMessage().contains("'c3'") && e.getMessage().contains("naive, hwlb, unified or dynamic-snitch"), e.getMessage());
    }
}
